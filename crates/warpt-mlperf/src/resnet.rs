//! ResNet-50 v1.5 (torchvision's layout and tensor names): the seeded
//! weights and the training network on candle (batch statistics,
//! differentiable). Inference runs as channels-last GEMMs
//! ([`crate::resnet_gemm`]); a plain f64 forward pass
//! ([`crate::resnet_reference`]) checks it.

use std::collections::HashMap;

use candle_core::{DType, Device, Module, Tensor, Var};
use warpt_models::model::tensor_values;

/// Blocks per stage and each stage's width (the bottleneck's inner channels).
pub const STAGES: [(usize, usize); 4] = [(3, 64), (4, 128), (6, 256), (3, 512)];
/// ImageNet classes.
pub const CLASSES: usize = 1000;
/// Batch norm epsilon.
pub(crate) const EPS: f64 = 1e-5;
/// ImageNet's channel means and standard deviations on the 0–255 scale.
pub const MEAN: [f32; 3] = [123.675, 116.28, 103.53];
/// See [`MEAN`].
pub const STD: [f32; 3] = [58.395, 57.12, 57.375];

/// One convolution: name prefix, in and out channels, kernel, stride,
/// padding, and its batch norm's prefix.
#[derive(Debug, Clone)]
pub struct ConvSpec {
    /// The convolution's tensor prefix (`layer1.0.conv1`).
    pub conv: String,
    /// The batch norm's tensor prefix (`layer1.0.bn1`).
    pub bn: String,
    /// Input channels.
    pub c_in: usize,
    /// Output channels.
    pub c_out: usize,
    /// Kernel size.
    pub k: usize,
    /// Stride.
    pub stride: usize,
    /// Zero padding on each side.
    pub pad: usize,
}

/// One bottleneck block.
#[derive(Debug, Clone)]
pub struct BlockSpec {
    /// 1×1 reduce, 3×3 (strided, v1.5), 1×1 expand.
    pub convs: [ConvSpec; 3],
    /// The projection shortcut of a stage's first block.
    pub down: Option<ConvSpec>,
}

fn conv(conv: &str, bn: &str, c_in: usize, c_out: usize, k: usize, stride: usize) -> ConvSpec {
    ConvSpec {
        conv: conv.into(),
        bn: bn.into(),
        c_in,
        c_out,
        k,
        stride,
        pad: k / 2,
    }
}

/// The stem convolution.
pub fn stem() -> ConvSpec {
    conv("conv1", "bn1", 3, 64, 7, 2)
}

/// A bottleneck block of some kind of convolution: its three
/// convolutions and its downsampling one, if any.
pub type Block<C> = ([C; 3], Option<C>);

/// ResNet-50's blocks, each convolution made from its spec by `conv`.
pub fn build_blocks<C>(
    conv: impl Fn(&ConvSpec) -> Result<C, String>,
) -> Result<Vec<Block<C>>, String> {
    blocks()
        .iter()
        .map(|b| {
            let [a, c2, c3] = &b.convs;
            Ok((
                [conv(a)?, conv(c2)?, conv(c3)?],
                b.down.as_ref().map(&conv).transpose()?,
            ))
        })
        .collect()
}

/// The residual blocks on candle tensors, `forward` applying one
/// convolution: in each block the three convolutions (ReLU after the
/// first two) plus the shortcut, then ReLU.
pub fn residual<C>(
    blocks: &[Block<C>],
    mut x: Tensor,
    forward: impl Fn(&C, &Tensor) -> candle_core::Result<Tensor>,
) -> candle_core::Result<Tensor> {
    for ([a, b, c], down) in blocks {
        let y = forward(a, &x)?.relu()?;
        let y = forward(b, &y)?.relu()?;
        let y = forward(c, &y)?;
        let shortcut = match down {
            Some(d) => forward(d, &x)?,
            None => x.clone(),
        };
        x = (y + shortcut)?.relu()?;
    }
    Ok(x)
}

/// Every bottleneck block, in order.
pub fn blocks() -> Vec<BlockSpec> {
    let mut out = Vec::new();
    let mut c_in = 64;
    for (stage, &(n, width)) in STAGES.iter().enumerate() {
        for b in 0..n {
            let p = format!("layer{}.{b}", stage + 1);
            let stride = if b == 0 && stage > 0 { 2 } else { 1 };
            let c_out = 4 * width;
            out.push(BlockSpec {
                convs: [
                    conv(
                        &format!("{p}.conv1"),
                        &format!("{p}.bn1"),
                        c_in,
                        width,
                        1,
                        1,
                    ),
                    conv(
                        &format!("{p}.conv2"),
                        &format!("{p}.bn2"),
                        width,
                        width,
                        3,
                        stride,
                    ),
                    conv(
                        &format!("{p}.conv3"),
                        &format!("{p}.bn3"),
                        width,
                        c_out,
                        1,
                        1,
                    ),
                ],
                down: (b == 0).then(|| {
                    conv(
                        &format!("{p}.downsample.0"),
                        &format!("{p}.downsample.1"),
                        c_in,
                        c_out,
                        1,
                        stride,
                    )
                }),
            });
            c_in = c_out;
        }
    }
    out
}

/// Every convolution, stem first.
fn all_convs() -> Vec<ConvSpec> {
    let mut v = vec![stem()];
    for b in blocks() {
        v.extend(b.convs.iter().cloned());
        v.extend(b.down);
    }
    v
}

/// The weights: torchvision's names, each tensor's shape and values.
pub type Weights = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// Standard normal values for `name`, from the seed.
fn normals(seed: u64, name: &str, len: usize) -> Vec<f32> {
    tensor_values(seed, name, len)
        .into_iter()
        .map(|v| v / 0.02)
        .collect()
}

/// The weights `seed` generates: He-normal convolutions, batch norms near
/// the identity (each block's last one scaled down, so activations keep
/// their size through fifty layers), a small classifier.
pub fn generate(seed: u64) -> Weights {
    let mut w = Weights::new();
    for c in all_convs() {
        let shape = vec![c.c_out, c.c_in, c.k, c.k];
        let fan_in = (c.c_in * c.k * c.k) as f32;
        let scale = (2.0 / fan_in).sqrt();
        let n = shape.iter().product();
        let values = normals(seed, &format!("{}.weight", c.conv), n)
            .into_iter()
            .map(|z| z * scale)
            .collect();
        w.insert(format!("{}.weight", c.conv), (shape, values));
        let last = c.bn.ends_with("bn3");
        let norm = |suffix: &str, f: &dyn Fn(f32) -> f32| {
            let name = format!("{}.{suffix}", c.bn);
            let v = normals(seed, &name, c.c_out).into_iter().map(f).collect();
            (name, (vec![c.c_out], v))
        };
        let gain = if last { 0.2 } else { 1.0 };
        for (name, t) in [
            norm("weight", &|z| gain * (1.0 + 0.1 * z)),
            norm("bias", &|z| 0.05 * z),
            norm("running_mean", &|z| 0.05 * z),
            norm("running_var", &|z| 1.0 + 0.1 * z.abs()),
        ] {
            w.insert(name, t);
        }
    }
    let fc = normals(seed, "fc.weight", CLASSES * 2048)
        .into_iter()
        .map(|z| z * (1.0 / 2048f32).sqrt())
        .collect();
    w.insert("fc.weight".into(), (vec![CLASSES, 2048], fc));
    let bias = normals(seed, "fc.bias", CLASSES)
        .into_iter()
        .map(|z| 0.01 * z)
        .collect();
    w.insert("fc.bias".into(), (vec![CLASSES], bias));
    w
}

/// Reads weights from a safetensors file with torchvision's names.
pub fn load(path: &std::path::Path) -> Result<Weights, String> {
    let tensors = candle_core::safetensors::load(path, &Device::Cpu)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = Weights::new();
    for (name, t) in tensors {
        if name.ends_with("num_batches_tracked") {
            continue;
        }
        let shape = t.dims().to_vec();
        let v = t
            .to_dtype(DType::F32)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| format!("{name}: {e}"))?;
        w.insert(name, (shape, v));
    }
    for c in all_convs() {
        let name = format!("{}.weight", c.conv);
        match w.get(&name) {
            Some((shape, _)) if *shape == [c.c_out, c.c_in, c.k, c.k] => {}
            Some((shape, _)) => return Err(format!("{name} has shape {shape:?}, not ResNet-50's")),
            None => {
                return Err(format!(
                    "{} has no {name}: not a torchvision ResNet-50",
                    path.display()
                ));
            }
        }
    }
    Ok(w)
}

fn get<'w>(w: &'w Weights, name: &str) -> Result<&'w (Vec<usize>, Vec<f32>), String> {
    w.get(name).ok_or_else(|| format!("missing tensor {name}"))
}

/// The 3×3, stride-2, padding-1 max pool after the stem on candle (inputs
/// are ReLU outputs, so zero padding is -∞ padding): the reference the
/// differentiable one is tested against.
#[cfg(test)]
fn max_pool(x: &Tensor) -> candle_core::Result<Tensor> {
    x.pad_with_zeros(2, 1, 1)?
        .pad_with_zeros(3, 1, 1)?
        .max_pool2d_with_stride(3, 2)
}

/// Every second element of dimension `dim` from `start`, `count` of them
/// (a strided slice, from operations candle can differentiate).
fn every_second(x: &Tensor, dim: usize, start: usize, count: usize) -> candle_core::Result<Tensor> {
    let mut shape = x.dims().to_vec();
    let part = x.narrow(dim, start, 2 * count)?;
    shape[dim] = count;
    shape.insert(dim + 1, 2);
    part.reshape(shape)?.narrow(dim + 1, 0, 1)?.squeeze(dim + 1)
}

/// The same max pool as [`max_pool`], as the maximum of nine strided views,
/// so it has a gradient (candle's pool backward needs kernel = stride).
fn max_pool_differentiable(x: &Tensor) -> candle_core::Result<Tensor> {
    let (h, w) = (x.dims()[2], x.dims()[3]);
    let (oh, ow) = ((h - 1) / 2 + 1, (w - 1) / 2 + 1);
    // Zero padding (the inputs are ReLU outputs) of 1, and one more where
    // the last window needs it.
    let xp = x
        .pad_with_zeros(2, 1, 1 + (2 * oh + 1).saturating_sub(h + 1))?
        .pad_with_zeros(3, 1, 1 + (2 * ow + 1).saturating_sub(w + 1))?;
    let mut out: Option<Tensor> = None;
    for ky in 0..3 {
        let rows = every_second(&xp, 2, ky, oh)?;
        for kx in 0..3 {
            let view = every_second(&rows, 3, kx, ow)?;
            out = Some(match out {
                None => view,
                Some(m) => m.maximum(&view)?,
            });
        }
    }
    out.ok_or_else(|| candle_core::Error::Msg("empty pool".into()))
}

/// A convolution and its batch norm as trainable variables.
struct TrainConv {
    weight: Var,
    gamma: Var,
    beta: Var,
    stride: usize,
    pad: usize,
}

impl TrainConv {
    fn new(w: &Weights, c: &ConvSpec, device: &Device) -> Result<Self, String> {
        let var = |name: String, shape: Vec<usize>| -> Result<Var, String> {
            let (_, v) = get(w, &name)?;
            Var::from_vec(v.clone(), shape, device).map_err(|e| e.to_string())
        };
        Ok(TrainConv {
            weight: var(
                format!("{}.weight", c.conv),
                vec![c.c_out, c.c_in, c.k, c.k],
            )?,
            gamma: var(format!("{}.weight", c.bn), vec![1, c.c_out, 1, 1])?,
            beta: var(format!("{}.bias", c.bn), vec![1, c.c_out, 1, 1])?,
            stride: c.stride,
            pad: c.pad,
        })
    }

    /// Convolution, then normalisation by the batch's own statistics.
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = x.conv2d(&self.weight, self.pad, self.stride, 1, 1)?;
        let mean = y.mean_keepdim((0, 2, 3))?;
        let centered = y.broadcast_sub(&mean)?;
        let var = centered.sqr()?.mean_keepdim((0, 2, 3))?;
        centered
            .broadcast_div(&(var + EPS)?.sqrt()?)?
            .broadcast_mul(self.gamma.as_tensor())?
            .broadcast_add(self.beta.as_tensor())
    }

    fn vars(&self) -> [Var; 3] {
        [self.weight.clone(), self.gamma.clone(), self.beta.clone()]
    }
}

/// ResNet-50 in training mode: batch norms use the batch's statistics and
/// every weight is a variable.
pub struct Training {
    stem: TrainConv,
    blocks: Vec<Block<TrainConv>>,
    fc: Var,
    fc_bias: Var,
}

impl Training {
    /// The network of weights `w` on `device`.
    pub fn new(w: &Weights, device: &Device) -> Result<Self, String> {
        let blocks = build_blocks(|c| TrainConv::new(w, c, device))?;
        let e = |e: candle_core::Error| e.to_string();
        Ok(Training {
            stem: TrainConv::new(w, &stem(), device)?,
            blocks,
            fc: Var::from_vec(get(w, "fc.weight")?.1.clone(), (CLASSES, 2048), device)
                .map_err(e)?,
            fc_bias: Var::from_vec(get(w, "fc.bias")?.1.clone(), CLASSES, device).map_err(e)?,
        })
    }

    /// Every trainable variable.
    pub fn vars(&self) -> Vec<Var> {
        let mut v: Vec<Var> = self.stem.vars().into();
        for (convs, down) in &self.blocks {
            for c in convs.iter().chain(down) {
                v.extend(c.vars());
            }
        }
        v.push(self.fc.clone());
        v.push(self.fc_bias.clone());
        v
    }

    /// Parameters in all.
    pub fn parameters(&self) -> usize {
        self.vars().iter().map(|v| v.elem_count()).sum()
    }
}

impl Module for Training {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let x = max_pool_differentiable(&self.stem.forward(x)?.relu()?)?;
        let x = residual(&self.blocks, x, |c, x| c.forward(x))?;
        let pooled = x.mean((2, 3))?;
        pooled
            .matmul(&self.fc.as_tensor().t()?)?
            .broadcast_add(self.fc_bias.as_tensor())
    }
}

/// Floating-point operations of one image's forward pass at `size` × `size`
/// (2 per multiply-add, convolutions and the classifier).
pub fn forward_flops(size: usize) -> f64 {
    let out = |s: usize, stride: usize, k: usize| (s + 2 * (k / 2) - k) / stride + 1;
    let mut flops = 0.0;
    let mut s = out(size, 2, 7);
    flops += 2.0 * (s * s * 64 * 3 * 49) as f64;
    s = (s + 2 - 3) / 2 + 1;
    for b in blocks() {
        let s_in = s;
        for c in &b.convs {
            let so = out(s, c.stride, c.k);
            flops += 2.0 * (so * so * c.c_out * c.c_in * c.k * c.k) as f64;
            s = so;
        }
        if let Some(d) = &b.down {
            let so = out(s_in, d.stride, 1);
            flops += 2.0 * (so * so * d.c_out * d.c_in) as f64;
        }
    }
    flops + 2.0 * (2048 * CLASSES) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_differentiable_pool_equals_candles() {
        for (h, w) in [(8, 8), (7, 9), (112, 112)] {
            let n = 2 * 3 * h * w;
            let v: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
                .collect();
            let x = Tensor::from_vec(v, (2, 3, h, w), &Device::Cpu).expect("x");
            let a = max_pool(&x)
                .expect("a")
                .flatten_all()
                .expect("f")
                .to_vec1::<f32>()
                .expect("v");
            let b = max_pool_differentiable(&x)
                .expect("b")
                .flatten_all()
                .expect("f")
                .to_vec1::<f32>()
                .expect("v");
            assert_eq!(a, b, "{h}x{w}");
        }
    }
}
