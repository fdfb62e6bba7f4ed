# Sourced by the scripts that build warpt's `cuda` feature (scripts/test,
# scripts/package): nvcc from PyPI (scripts/cuda-toolkit, fetched once into
# the target directory) and the settings candle's kernel build reads.
#
#   source scripts/lib/cuda.sh; cuda_env
cuda_env() {
    local home
    home="$(scripts/cuda-toolkit)"
    export CUDA_HOME="$home"
    export PATH="$home/bin:$PATH"
    # Kernels for Ampere (sm_80) with their PTX: Ada, Hopper and Blackwell
    # compile the PTX at load time, so the build needs no GPU to ask.
    export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-80}"
    # nvcc jobs at once (cudaforge uses half the cores by default).
    export CUDAFORGE_THREADS="${CUDAFORGE_THREADS:-$(nproc)}"
}
