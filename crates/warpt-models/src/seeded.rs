//! Weights from the seed for any candle model: a `VarBuilder` backend that
//! makes each tensor the model asks for from the seed and the tensor's name
//! ([`crate::model::tensor_values`]: N(0, 0.02²), norm weights near 1), so a
//! model is built at its configuration's size without a tensor list of its
//! own, and counts what it made.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle_core::{DType, Device, Result, Shape, Tensor};
use candle_nn::VarBuilder;
use candle_nn::var_builder::SimpleBackend;

use crate::model::tensor_values;

/// The backend: every name exists, its values come from the seed.
struct Seeded {
    seed: u64,
    made: Arc<AtomicUsize>,
}

impl SimpleBackend for Seeded {
    fn get(
        &self,
        shape: Shape,
        name: &str,
        _: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> Result<Tensor> {
        let n = shape.elem_count();
        self.made.fetch_add(n, Ordering::Relaxed);
        Tensor::from_vec(tensor_values(self.seed, name, n), shape, dev)?.to_dtype(dtype)
    }

    fn get_unchecked(&self, name: &str, _: DType, _: &Device) -> Result<Tensor> {
        candle_core::bail!("seeded weights need a shape for {name}")
    }

    fn contains_tensor(&self, _: &str) -> bool {
        true
    }
}

/// A `VarBuilder` whose tensors come from `seed`, and the count of the
/// values it has made (the model's parameters, once built).
pub fn var_builder(
    seed: u64,
    dtype: DType,
    device: &Device,
) -> (VarBuilder<'static>, Arc<AtomicUsize>) {
    let made = Arc::new(AtomicUsize::new(0));
    let backend: Box<dyn SimpleBackend> = Box::new(Seeded {
        seed,
        made: made.clone(),
    });
    (
        VarBuilder::from_backend(backend, dtype, device.clone()),
        made,
    )
}
