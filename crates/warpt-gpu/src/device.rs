//! Which GPU a benchmark runs on, and the wgpu device opened on it.
//!
//! Adapters are listed in wgpu's order over the Vulkan, Metal and DX12
//! backends; `device_index` picks one of that list (as `warpt list` shows
//! it). Left at -1, the first hardware adapter is taken, discrete before
//! integrated before virtual. A software adapter (Mesa's lavapipe and
//! llvmpipe, Microsoft's WARP: wgpu's device type `Cpu`) is never taken for
//! a GPU unless `allow_software=true`.

use std::sync::mpsc;
use std::time::Instant;

use warpt_harness::BenchmarkError;
use warpt_model::ParamValue;

/// What an adapter is, as reported and recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Its position in the list (`device_index`).
    pub index: usize,
    /// The device's name.
    pub name: String,
    /// `Vulkan`, `Metal`, `Dx12`.
    pub backend: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `VirtualGpu`, `Cpu` (software) or `Other`.
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// Whether it is a software rasteriser on the CPU.
    pub software: bool,
    /// Whether it has 16-bit floats in shaders.
    pub shader_f16: bool,
}

fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle())
}

fn adapters(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    pollster::block_on(
        instance.enumerate_adapters(
            wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12,
        ),
    )
}

fn summary(index: usize, a: &wgpu::Adapter) -> AdapterSummary {
    let info = a.get_info();
    let driver = match (info.driver.is_empty(), info.driver_info.is_empty()) {
        (false, false) => format!("{} ({})", info.driver, info.driver_info),
        (false, true) => info.driver.clone(),
        (true, false) => info.driver_info.clone(),
        (true, true) => "unknown".into(),
    };
    AdapterSummary {
        index,
        name: info.name.clone(),
        backend: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        driver,
        software: info.device_type == wgpu::DeviceType::Cpu,
        shader_f16: a.features().contains(wgpu::Features::SHADER_F16),
    }
}

/// Every adapter wgpu finds here, in `device_index` order.
pub fn list() -> Vec<AdapterSummary> {
    let instance = instance();
    adapters(&instance)
        .iter()
        .enumerate()
        .map(|(i, a)| summary(i, a))
        .collect()
}

/// An opened device on the chosen adapter.
pub struct Gpu {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter it is on.
    pub adapter: AdapterSummary,
    /// The limits the device was opened with (the adapter's own).
    pub limits: wgpu::Limits,
    /// Whether `shader-f16` was enabled.
    pub f16: bool,
}

/// Preference among hardware adapters: discrete first.
fn rank(device_type: &str) -> u8 {
    match device_type {
        "DiscreteGpu" => 0,
        "IntegratedGpu" => 1,
        "VirtualGpu" => 2,
        _ => 3,
    }
}

/// Picks an adapter of `list` by `device_index` (-1: the best hardware
/// one) under the software rule; the reason when none qualifies.
pub fn choose(
    list: &[AdapterSummary],
    device_index: i64,
    allow_software: bool,
) -> Result<usize, BenchmarkError> {
    if list.is_empty() {
        return Err(BenchmarkError::Skipped(
            "no GPU adapter: wgpu found no Vulkan, Metal or DX12 device (no driver, or no GPU)"
                .into(),
        ));
    }
    if device_index >= 0 {
        let a = list
            .get(device_index as usize)
            .ok_or_else(|| BenchmarkError::InvalidParam {
                key: "device_index".into(),
                reason: format!(
                    "{device_index}: this machine has {} adapter(s), 0 to {} (see `warpt list`)",
                    list.len(),
                    list.len() - 1
                ),
            })?;
        if a.software && !allow_software {
            return Err(BenchmarkError::Skipped(format!(
                "adapter {device_index} ({}) is a software device, not a GPU; \
                 --param allow_software=true runs on it anyway",
                a.name
            )));
        }
        return Ok(a.index);
    }
    let hardware = list
        .iter()
        .filter(|a| !a.software)
        .min_by_key(|a| (rank(&a.device_type), a.index));
    match hardware {
        Some(a) => Ok(a.index),
        None if allow_software => Ok(list[0].index),
        None => Err(BenchmarkError::Skipped(format!(
            "no hardware GPU (only {}); --param allow_software=true measures the software device",
            list.iter()
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

impl Gpu {
    /// Opens the adapter `device_index` selects (see [`choose`]), with the
    /// adapter's own limits and `shader-f16` where it has it.
    pub fn open(device_index: i64, allow_software: bool) -> Result<Gpu, BenchmarkError> {
        let instance = instance();
        let all = adapters(&instance);
        let list: Vec<AdapterSummary> =
            all.iter().enumerate().map(|(i, a)| summary(i, a)).collect();
        let index = choose(&list, device_index, allow_software)?;
        let adapter = &all[index];
        let limits = adapter.limits();
        let f16 = list[index].shader_f16;
        let features = if f16 {
            wgpu::Features::SHADER_F16
        } else {
            wgpu::Features::empty()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("warpt"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: Default::default(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: Default::default(),
        }))
        .map_err(|e| BenchmarkError::Failed(format!("opening {}: {e}", list[index].name)))?;
        Ok(Gpu {
            device,
            queue,
            adapter: list[index].clone(),
            limits,
            f16,
        })
    }

    /// The details every GPU result carries.
    pub fn details(&self) -> Vec<(String, ParamValue)> {
        vec![
            (
                "adapter".into(),
                ParamValue::from(self.adapter.name.as_str()),
            ),
            (
                "backend".into(),
                ParamValue::from(self.adapter.backend.as_str()),
            ),
            (
                "device_type".into(),
                ParamValue::from(self.adapter.device_type.as_str()),
            ),
            (
                "driver".into(),
                ParamValue::from(self.adapter.driver.as_str()),
            ),
            (
                "device_index".into(),
                ParamValue::Int(self.adapter.index as i64),
            ),
        ]
    }

    /// A compute pipeline from WGSL `source`'s `main`.
    pub fn pipeline(&self, label: &str, source: &str) -> wgpu::ComputePipeline {
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        self.device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
    }

    /// A buffer for `usage` holding `data`.
    pub fn filled<T: bytemuck::Pod>(
        &self,
        label: &str,
        data: &[T],
        usage: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        use wgpu::util::DeviceExt;
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(data),
                usage,
            })
    }

    /// A bind group of `buffers` at bindings 0, 1, ... of group 0.
    pub fn bind(
        &self,
        pipeline: &wgpu::ComputePipeline,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        })
    }

    /// Submits `dispatches` dispatches of `groups` workgroups of
    /// `pipeline` in one command buffer and waits for them: the seconds
    /// from submission to completion, as the host sees them.
    pub fn run(
        &self,
        pipeline: &wgpu::ComputePipeline,
        bind: &wgpu::BindGroup,
        groups: u32,
        dispatches: u32,
    ) -> Result<f64, BenchmarkError> {
        let mut enc = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind, &[]);
            for _ in 0..dispatches {
                pass.dispatch_workgroups(groups, 1, 1);
            }
        }
        let commands = enc.finish();
        let start = Instant::now();
        self.queue.submit([commands]);
        self.wait()?;
        Ok(start.elapsed().as_secs_f64())
    }

    /// Waits for everything submitted.
    pub fn wait(&self) -> Result<(), BenchmarkError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| BenchmarkError::Failed(format!("waiting for the GPU: {e}")))
    }

    /// Copies `size` bytes of `src` back to the host.
    pub fn read(&self, src: &wgpu::Buffer, size: u64) -> Result<Vec<u8>, BenchmarkError> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(src, 0, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        map_read(self, &staging)
    }
}

/// Maps a `MAP_READ` buffer and copies it out.
pub fn map_read(gpu: &Gpu, staging: &wgpu::Buffer) -> Result<Vec<u8>, BenchmarkError> {
    let (tx, rx) = mpsc::channel();
    staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    gpu.wait()?;
    rx.recv()
        .map_err(|_| BenchmarkError::Failed("the GPU never mapped the buffer".into()))?
        .map_err(|e| BenchmarkError::Failed(format!("mapping a GPU buffer: {e}")))?;
    let bytes = staging
        .slice(..)
        .get_mapped_range()
        .map_err(|e| BenchmarkError::Failed(format!("reading a GPU buffer: {e}")))?
        .to_vec();
    staging.unmap();
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(index: usize, device_type: &str) -> AdapterSummary {
        AdapterSummary {
            index,
            name: format!("dev{index}"),
            backend: "Vulkan".into(),
            device_type: device_type.into(),
            driver: "d".into(),
            software: device_type == "Cpu",
            shader_f16: false,
        }
    }

    #[test]
    fn software_is_never_taken_for_a_gpu_unless_allowed() {
        let only_sw = [adapter(0, "Cpu")];
        let e = choose(&only_sw, -1, false).unwrap_err().to_string();
        assert!(e.contains("no hardware GPU (only dev0)"), "{e}");
        assert_eq!(choose(&only_sw, -1, true).unwrap(), 0);
        assert!(matches!(
            choose(&only_sw, 0, false),
            Err(BenchmarkError::Skipped(_))
        ));
        let mixed = [
            adapter(0, "Cpu"),
            adapter(1, "IntegratedGpu"),
            adapter(2, "DiscreteGpu"),
        ];
        assert_eq!(choose(&mixed, -1, false).unwrap(), 2);
        assert_eq!(choose(&mixed, 1, false).unwrap(), 1);
        assert!(matches!(
            choose(&mixed, 7, false),
            Err(BenchmarkError::InvalidParam { .. })
        ));
        assert!(matches!(
            choose(&[], -1, true),
            Err(BenchmarkError::Skipped(_))
        ));
    }
}
