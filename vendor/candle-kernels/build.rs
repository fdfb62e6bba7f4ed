use cudaforge::{KernelBuilder, Result};
use std::env;
use std::path::PathBuf;

const CUTILE_FEATURE: &str = "CARGO_FEATURE_CUTILE";

fn main() -> Result<()> {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src");
    println!("cargo::rerun-if-changed=src/compatibility.cuh");
    println!("cargo::rerun-if-changed=src/cuda_utils.cuh");
    println!("cargo::rerun-if-changed=src/binary_op_macros.cuh");

    // Build for PTX
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let ptx_path = out_dir.join("ptx.rs");
    let bindings = KernelBuilder::new()
        .source_dir("src") // Scan src/ for .cu files
        .exclude(&["moe_*.cu", "mmvq_gguf.cu", "mmq_*.cu"]) // Exclude statically compiled kernels from ptx build
        .arg("--expt-relaxed-constexpr")
        .arg("-std=c++17")
        .arg("-O3")
        .build_ptx()?;

    bindings.write(&ptx_path)?;

    let mut moe_sources = vec![
        "src/moe/moe_gguf.cu",
        "src/moe/moe_wmma.cu",
        "src/moe/moe_wmma_gguf.cu",
        "src/mmvq_gguf.cu",
        "src/mmq_gguf/mmq_quantize.cu",
        "src/mmq_gguf/mmq_instance_q4_0.cu",
        "src/mmq_gguf/mmq_instance_q4_1.cu",
        "src/mmq_gguf/mmq_instance_q5_0.cu",
        "src/mmq_gguf/mmq_instance_q5_1.cu",
        "src/mmq_gguf/mmq_instance_q8_0.cu",
        "src/mmq_gguf/mmq_instance_q2_k.cu",
        "src/mmq_gguf/mmq_instance_q3_k.cu",
        "src/mmq_gguf/mmq_instance_q4_k.cu",
        "src/mmq_gguf/mmq_instance_q5_k.cu",
        "src/mmq_gguf/mmq_instance_q6_k.cu",
    ];
    if env::var_os(CUTILE_FEATURE).is_some() {
        moe_sources.push("src/moe/moe_align.cu");
    }

    let mut moe_builder = KernelBuilder::default()
        .source_files(moe_sources)
        .arg("--expt-relaxed-constexpr")
        .arg("-std=c++17")
        .arg("-O3");

    // Disable bf16 WMMA kernels on GPUs older than sm_80 (Ampere).
    // bf16 WMMA fragments require compute capability >= 8.0.
    let compute_cap = cudaforge::detect_compute_cap()
        .map(|arch| arch.base())
        .unwrap_or(80);
    if compute_cap < 80 {
        moe_builder = moe_builder.arg("-DNO_BF16_KERNEL");
    }
    // warpt: embed the PTX beside the machine code, so a newer GPU than the
    // one built for (an sm_80 build on an sm_90 H100/H200) JIT-compiles
    // these kernels instead of failing with "no kernel image".
    let ptx = format!("-gencode=arch=compute_{compute_cap},code=compute_{compute_cap}");
    moe_builder = moe_builder.arg(&ptx);

    let mut is_target_msvc = false;
    if let Ok(target) = std::env::var("TARGET") {
        if target.contains("msvc") {
            is_target_msvc = true;
            moe_builder = moe_builder.arg("-D_USE_MATH_DEFINES");
        }
    }

    if !is_target_msvc {
        moe_builder = moe_builder.arg("-Xcompiler").arg("-fPIC");
    }

    moe_builder.build_lib(out_dir.join("libmoe.a"))?;
    println!("cargo:rustc-link-search={}", out_dir.display());
    println!("cargo:rustc-link-lib=moe");
    // warpt: the CUDA runtime linked statically (libcudart_static.a, which
    // opens libcuda with dlopen at its first call) instead of libcudart.so,
    // so the binary starts on machines without CUDA; see vendor/README.md.
    if is_target_msvc {
        println!("cargo:rustc-link-lib=dylib=cudart");
    } else {
        match cudart_static_dir() {
            Some(dir) => println!("cargo:rustc-link-search=native={}", dir.display()),
            None => println!(
                "cargo:warning=libcudart_static.a not found under CUDA_HOME, CUDA_PATH or nvcc's toolkit"
            ),
        }
        println!("cargo:rustc-link-lib=static=cudart_static");
        println!("cargo:rustc-link-lib=dylib=dl");
        println!("cargo:rustc-link-lib=dylib=rt");
        println!("cargo:rustc-link-lib=dylib=pthread");
    }
    if !is_target_msvc {
        println!("cargo:rustc-link-lib=stdc++");
    }
    Ok(())
}

/// warpt: the toolkit directory holding `libcudart_static.a`: under
/// `CUDA_HOME` or `CUDA_PATH`, else beside the `nvcc` on `NVCC` or the PATH.
fn cudart_static_dir() -> Option<PathBuf> {
    println!("cargo::rerun-if-env-changed=CUDA_HOME");
    println!("cargo::rerun-if-env-changed=CUDA_PATH");
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| env::var_os(v).map(PathBuf::from))
        .collect();
    let nvcc = env::var_os("NVCC").map(PathBuf::from).or_else(|| {
        env::split_paths(&env::var_os("PATH")?)
            .map(|d| d.join("nvcc"))
            .find(|p| p.is_file())
    });
    if let Some(root) = nvcc.and_then(|n| n.parent()?.parent().map(PathBuf::from)) {
        roots.push(root);
    }
    roots.into_iter().find_map(|root| {
        ["lib64", "lib", "targets/x86_64-linux/lib"]
            .iter()
            .map(|sub| root.join(sub))
            .find(|d| d.join("libcudart_static.a").is_file())
    })
}
