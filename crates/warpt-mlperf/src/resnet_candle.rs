//! ResNet-50 v1.5 inference on candle's operations, for a GPU (`device =
//! cuda`): batch norms folded into the convolutions as on the CPU path,
//! NCHW, every convolution candle's (im2col and a cuBLAS GEMM on CUDA), in
//! f32 or bf16 (weights and activations bf16, as PyTorch's autocast keeps
//! them; cuBLAS sums in f32).

use candle_core::{DType, Device, Tensor};
use warpt_models::packed::Precision;

use crate::resnet::{self, CLASSES, ConvSpec, Weights};

/// A convolution with its batch norm folded in: `w · γ/σ`, `β - μ · γ/σ`.
struct Conv {
    weight: Tensor,
    bias: Tensor,
    stride: usize,
    pad: usize,
}

impl Conv {
    fn new(w: &Weights, c: &ConvSpec, dtype: DType, dev: &Device) -> Result<Self, String> {
        let get = |name: String| {
            w.get(&name)
                .map(|(_, v)| v.as_slice())
                .ok_or_else(|| format!("missing tensor {name}"))
        };
        let weight = get(format!("{}.weight", c.conv))?;
        let gamma = get(format!("{}.weight", c.bn))?;
        let beta = get(format!("{}.bias", c.bn))?;
        let mean = get(format!("{}.running_mean", c.bn))?;
        let var = get(format!("{}.running_var", c.bn))?;
        let per_out = c.c_in * c.k * c.k;
        let scale: Vec<f64> = (0..c.c_out)
            .map(|o| f64::from(gamma[o]) / (f64::from(var[o]) + resnet::EPS).sqrt())
            .collect();
        let folded: Vec<f32> = weight
            .iter()
            .enumerate()
            .map(|(i, &x)| (f64::from(x) * scale[i / per_out]) as f32)
            .collect();
        let bias: Vec<f32> = (0..c.c_out)
            .map(|o| (f64::from(beta[o]) - f64::from(mean[o]) * scale[o]) as f32)
            .collect();
        let t = |v: Vec<f32>, shape: &[usize]| {
            Tensor::from_vec(v, shape, dev)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(|e| format!("{}: {e}", c.conv))
        };
        Ok(Conv {
            weight: t(folded, &[c.c_out, c.c_in, c.k, c.k])?,
            bias: t(bias, &[1, c.c_out, 1, 1])?,
            stride: c.stride,
            pad: c.pad,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.conv2d(&self.weight, self.pad, self.stride, 1, 1)?
            .broadcast_add(&self.bias)
    }
}

/// The network on a candle device.
pub struct CandleNet {
    stem: Conv,
    blocks: Vec<resnet::Block<Conv>>,
    fc: Tensor,
    fc_bias: Tensor,
    dtype: DType,
    precision: Precision,
    device: Device,
}

impl CandleNet {
    /// The network of weights `w` on `dev` in `precision`.
    pub fn new(w: &Weights, precision: Precision, dev: &Device) -> Result<Self, String> {
        let dtype = match precision {
            Precision::F32 => DType::F32,
            Precision::Bf16 => DType::BF16,
            Precision::F16 => DType::F16,
        };
        let conv = |c: &ConvSpec| Conv::new(w, c, dtype, dev);
        let blocks = resnet::build_blocks(conv)?;
        let dense = |name: &str, shape: &[usize]| {
            let (_, v) = w
                .get(name)
                .ok_or_else(|| format!("missing tensor {name}"))?;
            Tensor::from_vec(v.clone(), shape, dev)
                .and_then(|t| t.to_dtype(dtype))
                .map_err(|e| format!("{name}: {e}"))
        };
        Ok(CandleNet {
            stem: conv(&resnet::stem())?,
            blocks,
            fc: dense("fc.weight", &[CLASSES, 2048])?,
            fc_bias: dense("fc.bias", &[CLASSES])?,
            dtype,
            precision,
            device: dev.clone(),
        })
    }

    /// The precision it runs in.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The device it runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Logits of `n` images of `size` × `size` (`nchw`, normalised), one
    /// row of [`CLASSES`] each, copied back to the host.
    pub fn forward(&self, nchw: &[f32], n: usize, size: usize) -> candle_core::Result<Vec<f32>> {
        let x = Tensor::from_slice(nchw, (n, 3, size, size), &self.device)?.to_dtype(self.dtype)?;
        // The stem, then the 3×3 stride-2 max pool (zero padding: its
        // inputs are ReLU outputs).
        let x = self.stem.forward(&x)?.relu()?;
        let x = x
            .pad_with_zeros(2, 1, 1)?
            .pad_with_zeros(3, 1, 1)?
            .max_pool2d_with_stride(3, 2)?;
        let x = resnet::residual(&self.blocks, x, Conv::forward)?;
        let pooled = x.to_dtype(DType::F32)?.mean((2, 3))?.to_dtype(self.dtype)?;
        pooled
            .matmul(&self.fc.t()?)?
            .broadcast_add(&self.fc_bias)?
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1::<f32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the CPU (the GPU's code path, candle's operations) the folded
    /// network agrees with the f64 reference on a 32×32 image.
    #[test]
    fn the_folded_network_matches_the_reference() {
        let w = resnet::generate(7);
        let net = CandleNet::new(&w, Precision::F32, &Device::Cpu).unwrap();
        let image = crate::resnet50_infer::Library::seeded(3, 1, 32).normalised(0);
        let got = net.forward(&image, 1, 32).unwrap();
        let want = crate::resnet_reference::logits(&w, &image, 32).unwrap();
        let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (f64::from(*g) - w).abs() / scale)
            .fold(0f64, f64::max);
        assert_eq!(got.len(), CLASSES);
        assert!(worst < 1e-4, "{worst:e}");
    }
}
