//! A plain f64 ResNet-50 forward pass for one image: direct convolution
//! loops, batch norms with running statistics as torchvision evaluates
//! them (not folded), max pooling with -∞ padding. It checks candle's
//! folded network on a small image.

use crate::resnet::{self, CLASSES, ConvSpec, Weights};

/// An image: channels × height × width, in f64.
struct Map {
    c: usize,
    h: usize,
    w: usize,
    v: Vec<f64>,
}

fn tensor<'w>(w: &'w Weights, name: &str) -> Result<&'w [f32], String> {
    w.get(name)
        .map(|t| t.1.as_slice())
        .ok_or_else(|| format!("missing tensor {name}"))
}

fn conv_bn(x: &Map, w: &Weights, c: &ConvSpec) -> Result<Map, String> {
    let kernel = tensor(w, &format!("{}.weight", c.conv))?;
    let (k, s, p) = (c.k, c.stride, c.pad);
    let oh = (x.h + 2 * p - k) / s + 1;
    let ow = (x.w + 2 * p - k) / s + 1;
    let mut out = vec![0f64; c.c_out * oh * ow];
    for o in 0..c.c_out {
        for y in 0..oh {
            for xx in 0..ow {
                let mut acc = 0f64;
                for i in 0..c.c_in {
                    for ky in 0..k {
                        let iy = (y * s + ky) as isize - p as isize;
                        if iy < 0 || iy >= x.h as isize {
                            continue;
                        }
                        for kx in 0..k {
                            let ix = (xx * s + kx) as isize - p as isize;
                            if ix < 0 || ix >= x.w as isize {
                                continue;
                            }
                            let wv = kernel[((o * c.c_in + i) * k + ky) * k + kx] as f64;
                            acc += wv * x.v[(i * x.h + iy as usize) * x.w + ix as usize];
                        }
                    }
                }
                out[(o * oh + y) * ow + xx] = acc;
            }
        }
    }
    let p = |n: &str| tensor(w, &format!("{}.{n}", c.bn));
    let (g, b, m, var) = (
        p("weight")?,
        p("bias")?,
        p("running_mean")?,
        p("running_var")?,
    );
    for o in 0..c.c_out {
        let scale = g[o] as f64 / (var[o] as f64 + 1e-5).sqrt();
        for v in &mut out[o * oh * ow..(o + 1) * oh * ow] {
            *v = (*v - m[o] as f64) * scale + b[o] as f64;
        }
    }
    Ok(Map {
        c: c.c_out,
        h: oh,
        w: ow,
        v: out,
    })
}

fn relu(mut m: Map) -> Map {
    m.v.iter_mut().for_each(|v| *v = v.max(0.0));
    m
}

fn max_pool(x: &Map) -> Map {
    let (oh, ow) = ((x.h + 2 - 3) / 2 + 1, (x.w + 2 - 3) / 2 + 1);
    let mut v = vec![f64::NEG_INFINITY; x.c * oh * ow];
    for c in 0..x.c {
        for y in 0..oh {
            for xx in 0..ow {
                let slot = &mut v[(c * oh + y) * ow + xx];
                for ky in 0..3 {
                    for kx in 0..3 {
                        let (iy, ix) = ((y * 2 + ky) as isize - 1, (xx * 2 + kx) as isize - 1);
                        if iy >= 0 && ix >= 0 && (iy as usize) < x.h && (ix as usize) < x.w {
                            *slot = slot.max(x.v[(c * x.h + iy as usize) * x.w + ix as usize]);
                        }
                    }
                }
            }
        }
    }
    Map {
        c: x.c,
        h: oh,
        w: ow,
        v,
    }
}

/// The logits of one normalised image (`3 × size × size`, row-major).
pub fn logits(w: &Weights, image: &[f32], size: usize) -> Result<Vec<f64>, String> {
    let mut x = Map {
        c: 3,
        h: size,
        w: size,
        v: image.iter().map(|&v| v as f64).collect(),
    };
    x = max_pool(&relu(conv_bn(&x, w, &resnet::stem())?));
    for b in resnet::blocks() {
        let [c1, c2, c3] = &b.convs;
        let y = relu(conv_bn(&x, w, c1)?);
        let y = relu(conv_bn(&y, w, c2)?);
        let mut y = conv_bn(&y, w, c3)?;
        let shortcut = match &b.down {
            Some(d) => conv_bn(&x, w, d)?,
            None => x,
        };
        y.v.iter_mut().zip(&shortcut.v).for_each(|(a, s)| *a += s);
        x = relu(y);
    }
    let hw = (x.h * x.w) as f64;
    let pooled: Vec<f64> = (0..x.c)
        .map(|c| x.v[c * x.h * x.w..(c + 1) * x.h * x.w].iter().sum::<f64>() / hw)
        .collect();
    let (fc, bias) = (tensor(w, "fc.weight")?, tensor(w, "fc.bias")?);
    Ok((0..CLASSES)
        .map(|o| {
            bias[o] as f64
                + fc[o * 2048..(o + 1) * 2048]
                    .iter()
                    .zip(&pooled)
                    .map(|(a, b)| *a as f64 * b)
                    .sum::<f64>()
        })
        .collect())
}
