//! A directory of images as ResNet-50 takes them, preprocessed as MLPerf's
//! reference does: the shorter side resized to `size / 0.875` (256 for
//! 224), bilinear, then the centre `size × size` crop, as RGB planes.

use std::path::Path;

use image::imageops::FilterType;

/// File extensions read.
pub const EXTENSIONS: [&str; 5] = ["jpg", "jpeg", "png", "ppm", "pnm"];

/// Every image in `dir` (sorted by name), as 3 × size × size bytes, with
/// its file name (what a labels file names it by).
pub fn load_dir(dir: &Path, size: usize) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{} has no images ({})",
            dir.display(),
            EXTENSIONS.join(", ")
        ));
    }
    files
        .iter()
        .map(|f| {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok((name, load(f, size)?))
        })
        .collect()
}

/// One image, preprocessed.
pub fn load(path: &Path, size: usize) -> Result<Vec<u8>, String> {
    let img = image::open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .to_rgb8();
    let (w, h) = img.dimensions();
    let short = (size as f64 / 0.875).round() as u32;
    let (nw, nh) = if w < h {
        (short, ((h as f64) * short as f64 / w as f64).round() as u32)
    } else {
        (((w as f64) * short as f64 / h as f64).round() as u32, short)
    };
    let resized = image::imageops::resize(&img, nw.max(1), nh.max(1), FilterType::Triangle);
    let (x0, y0) = (
        (nw.saturating_sub(size as u32)) / 2,
        (nh.saturating_sub(size as u32)) / 2,
    );
    let mut out = vec![0u8; 3 * size * size];
    for y in 0..size {
        for x in 0..size {
            let p = resized.get_pixel((x0 + x as u32).min(nw - 1), (y0 + y as u32).min(nh - 1));
            for c in 0..3 {
                out[(c * size + y) * size + x] = p[c];
            }
        }
    }
    Ok(out)
}
