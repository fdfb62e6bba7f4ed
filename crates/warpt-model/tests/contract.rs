//! The data contract: every type round-trips, old exports keep loading, and
//! the JSON Schema changes only on purpose.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use warpt_model::*;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
    let json = serde_json::to_string_pretty(value).expect("serialises");
    let back: T = serde_json::from_str(&json).expect("deserialises");
    assert_eq!(
        &back, value,
        "round trip changed the value; JSON was {json}"
    );
}

fn full_suite_run() -> BenchmarkSuiteRun {
    let at: Timestamp = "2026-11-22T01:02:03.456789Z".parse().unwrap();
    let stats = MetricStats {
        n: 3,
        mean: 2.0,
        median: 2.0,
        std: 1.0,
        min: 1.0,
        max: 3.0,
        p25: 1.5,
        p50: 2.0,
        p75: 2.5,
        p90: 2.8,
        p95: 2.9,
        p99: 2.98,
        p999: Some(2.998),
        ci95_low: 1.0,
        ci95_high: 3.0,
        outliers: 0,
        stop_reason: Some(StopReason::SampleCap),
        samples: vec![1.0, 2.0, 3.0],
        samples_stride: Some(1),
        percentiles: [("p99.9".to_string(), 2.998)].into(),
    };
    let spec = BenchmarkSpec {
        id: BenchmarkId::new("micro", "cpu_flops"),
        components: vec![BenchmarkComponent::Cpu, BenchmarkComponent::System],
        kind: BenchmarkKind::Domain,
        description: Some("d".into()),
        default_duration_seconds: Some(2.5),
        external_tool: Some("xhpl".into()),
        params: [
            ("b".to_string(), ParamValue::Bool(true)),
            ("i".to_string(), ParamValue::Int(-3)),
            ("f".to_string(), ParamValue::Float(0.25)),
            ("s".to_string(), ParamValue::Str("x".into())),
        ]
        .into(),
        param_help: [("i".to_string(), "an int".to_string())].into(),
        param_kinds: Default::default(),
        param_ranges: Default::default(),
        param_choices: Default::default(),
        param_units: Default::default(),
        clock_probe: ClockProbe::Brief,
        check: None,
        timeouts: StageLimits {
            setup: Some(120.0),
            ..StageLimits::default()
        },
        metrics: vec!["gflops".into()],
    };
    let mut result =
        BenchmarkRunResult::new(spec.clone(), spec.params.clone(), RunStatus::Timeout, at);
    result.error_message = Some("stage measure exceeded 15 s".into());
    result.metrics = vec![BenchmarkMetric {
        name: "gflops".into(),
        value: 2.0,
        unit: "GFLOP/s".into(),
        higher_is_better: true,
        tags: [("precision".to_string(), "fp64".to_string())].into(),
        stats: Some(stats),
    }];
    result.stop_reason = Some(StopReason::TimeCap);
    result.validation = Some(Validation::fail("residual 3e-2 > 16"));
    result.details = [("isa".to_string(), ParamValue::Str("avx512f".into()))].into();
    result.warnings = vec!["governor is powersave".into()];
    result.resources = Some(Resources {
        peak_rss_bytes: Some(1 << 30),
        cpu_user_s: Some(1.5),
        cpu_sys_s: Some(0.25),
        energy_j: None,
        gpu_memory_peak_bytes: Some(2 << 30),
        notes: vec!["energy: RAPL not readable".into()],
    });
    result.watchdog = Some(Watchdog {
        setup: Some(StageRecord {
            status: StageStatus::Completed,
            duration_s: 0.5,
            limit_s: Some(30.0),
        }),
        warmup: Some(StageRecord {
            status: StageStatus::Completed,
            duration_s: 1.0,
            limit_s: Some(15.0),
        }),
        measure: Some(StageRecord {
            status: StageStatus::Timeout,
            duration_s: 15.2,
            limit_s: Some(15.0),
        }),
        validate: Some(StageRecord {
            status: StageStatus::Skipped,
            duration_s: 0.0,
            limit_s: None,
        }),
    });
    result.quality = Some(Quality::Noisy);
    result.measurement_quality = Some(Quality::Noisy);
    result.quality_reasons = vec!["governor 'powersave' is not 'performance'".into()];
    result.interrupted = true;
    result.crash = Some(CrashInfo {
        exit_code: None,
        signal: Some(11),
        signal_name: Some("SIGSEGV".into()),
        stderr_tail: vec!["boom".into()],
    });
    result.telemetry = Some(TelemetrySummary {
        samples: 3,
        mean_power_w: Some(750.0),
        max_power_w: Some(820.0),
        energy_j: Some(2250.0),
        energy_sources: [
            ("cpu_package", 270.0, 90.0),
            ("dram", 30.0, 10.0),
            ("gpu", 1950.0, 650.0),
        ]
        .into_iter()
        .map(|(k, energy_j, mean_power_w)| {
            (
                k.to_string(),
                warpt_model::SourceEnergy {
                    energy_j,
                    mean_power_w,
                    samples: 3,
                },
            )
        })
        .collect(),
        max_temp_c: Some(70.0),
        min_freq_mhz: Some(2900.0),
        mean_freq_mhz: Some(3000.0),
        throttled: false,
        energy_per_unit: [("gflops precision=fp64,threads=all".to_string(), 0.5)].into(),
        mean_cpu_utilization_percent: Some(99.0),
        notes: vec![],
        peak_rss_bytes: Some(3 << 30),
        mean_rss_bytes: Some(2 << 30),
        peak_gpu_memory_bytes: None,
        memory_timeline: vec![
            warpt_model::MemoryPoint {
                seconds: 0.0,
                rss_bytes: 1 << 30,
            },
            warpt_model::MemoryPoint {
                seconds: 1.0,
                rss_bytes: 3 << 30,
            },
        ],
    });
    result.system = Some(ListOutput::default());
    result.interference = Some(Interference {
        window_s: 2.0,
        cpus: 2,
        steal_share: Some(0.01),
        foreign_cpu_s: Some(0.5),
        foreign_cpu_share: Some(0.125),
        benchmark_cpu_s: Some(1.9),
        run_queue_mean: Some(2.5),
        run_queue_max: Some(4),
    });
    let trial = Trial {
        index: 1,
        start_time: Some(at),
        end_time: Some(at),
        order: vec![0],
        benchmarks: vec![result.clone()],
    };
    BenchmarkSuiteRun {
        trials: vec![trial],
        id: "20261122T010203Z-abcdef".into(),
        suite: "micro".into(),
        components: vec![BenchmarkComponent::Cpu],
        benchmarks: vec![result],
        metadata: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        start_time: Some(at),
        end_time: Some(at),
        interrupted: true,
        manifest: Some(Manifest {
            warpt_version: "0.1.0".into(),
            build_profile: "release".into(),
            command_line: vec!["warpt".into(), "benchmark".into(), "run".into()],
            hostname: "h".into(),
            os: "Debian".into(),
            kernel: "6.1".into(),
            cpu_model: "cpu".into(),
            seed: 42,
            config: RunConfig {
                plan: vec![BenchmarkId::new("micro", "cpu_flops")],
                duration_s: Some(1.0),
                burnin_s: 0.5,
                seed: 42,
                param_overrides: [("i".to_string(), "3".to_string())].into(),
                target_rel_ci: 0.01,
                timeouts: StageLimits {
                    measure: Some(60.0),
                    ..StageLimits::default()
                },
                benchmark_timeouts: [(
                    "micro/cpu_flops".to_string(),
                    StageLimits {
                        validate: Some(5.0),
                        ..StageLimits::default()
                    },
                )]
                .into(),
                timeout_multiplier: 2.0,
                in_process: true,
                config_file: Some("warpt.toml".into()),
                repeat: 3,
            },
            env: [("OMP_NUM_THREADS".to_string(), "2".to_string())].into(),
            git: Some(GitState {
                commit: "abc".into(),
                branch: Some("main".into()),
                dirty: true,
            }),
            microcode: Some("0x1000065".into()),
            governor: Some("performance".into()),
            boost: Some(false),
            smt: Some("off".into()),
            load_average: Some([0.5, 0.25, 0.125]),
            warnings: vec!["load".into()],
            extra: [("git_dirty".to_string(), ParamValue::Bool(false))].into(),
            labels: [("bios".to_string(), "1.2".to_string())].into(),
            description: Some("before the BIOS update".into()),
        }),
        system: Some(ListOutput {
            cpu: CpuInfo {
                model: "m".into(),
                vendor: "v".into(),
                sockets: Some(1),
                logical_cores: 2,
                physical_cores: Some(2),
                threads_per_core: Some(1),
                mhz: Some(2600.0),
                base_mhz: Some(2000.0),
                max_mhz: Some(3700.0),
                flags: vec!["avx2".into()],
                caches: vec![CacheInfo {
                    level: 3,
                    kind: "Unified".into(),
                    size_bytes: 32 << 20,
                    instances: 1,
                }],
                numa_nodes: Some(1),
            },
            memory: MemoryInfo {
                total_bytes: 1,
                available_bytes: 1,
                swap_total_bytes: 2,
                swap_free_bytes: 1,
                hugepages_total: 4,
                hugepage_size_bytes: 2 << 20,
                transparent_hugepages: Some("madvise".into()),
                dimms: vec![DimmInfo {
                    locator: "A1".into(),
                    size_bytes: 16 << 30,
                    kind: Some("DDR5".into()),
                    speed_mts: Some(4800),
                    manufacturer: None,
                    part_number: Some("X".into()),
                }],
                dimm_note: None,
            },
            os: OsInfo {
                name: "n".into(),
                kernel: "k".into(),
                hostname: "h".into(),
                arch: "x86_64".into(),
                virtualization: Some("kvm".into()),
                container: None,
            },
            gpus: vec![GpuInfo {
                index: 0,
                name: "NVIDIA H100".into(),
                vendor: "NVIDIA".into(),
                vendor_id: Some("0x10de".into()),
                device_id: Some("0x2330".into()),
                driver: Some("nvidia 550".into()),
                memory_total_bytes: Some(80 << 30),
                uuid: Some("GPU-1".into()),
                source: "nvml".into(),
                compute_capability: Some("9.0".into()),
                sm_count: Some(132),
                memory_bus_width_bits: Some(5120),
                memory_class: Some("HBM".into()),
                memory_bandwidth_gbps: Some(3352.3),
                sm_clock_mhz: Some(345),
                sm_clock_max_mhz: Some(1980),
                memory_clock_mhz: Some(2619),
                memory_clock_max_mhz: Some(2619),
                power_limit_w: Some(700.0),
                cuda_driver_version: Some("12.4".into()),
                cuda_runtime: Some("cuBLAS 12.4.5 (libcublas.so.12)".into()),
            }],
            gpu_notes: vec![],
            compute_adapters: vec![warpt_model::ComputeAdapter {
                index: 0,
                name: "NVIDIA H100".into(),
                backend: "Vulkan".into(),
                device_type: "DiscreteGpu".into(),
                driver: "NVIDIA (550)".into(),
                software: false,
                shader_f16: true,
            }],
            model_support: vec![warpt_model::ModelSupport {
                family: "llama".into(),
                benchmark: "pepbench/llm_infer".into(),
                device: "cpu".into(),
                precisions: vec!["f32".into(), "bf16".into()],
                reason: None,
            }],
            storage: vec![StorageDevice {
                name: "nvme0n1".into(),
                model: Some("disk".into()),
                size_bytes: 1 << 40,
                rotational: Some(false),
                scheduler: Some("none".into()),
                removable: false,
            }],
            mounts: vec![MountInfo {
                mount_point: "/".into(),
                filesystem: "ext4".into(),
                source: "/dev/nvme0n1p1".into(),
                ..Default::default()
            }],
            network: vec![NetworkInterface {
                name: "eth0".into(),
                speed_mbps: Some(25_000),
                mtu: Some(9000),
                driver: Some("mlx5_core".into()),
                state: Some("up".into()),
                mac: Some("00:11:22:33:44:55".into()),
                loopback: false,
            }],
            tools: vec![ToolInfo {
                name: "fio".into(),
                path: "/usr/bin/fio".into(),
                version: Some("fio-3.33".into()),
            }],
        }),
    }
}

#[test]
fn every_type_round_trips() {
    let run = full_suite_run();
    round_trip(&run);
    round_trip(&run.benchmarks[0]);
    round_trip(&run.benchmarks[0].spec);
    round_trip(&run.benchmarks[0].metrics[0]);
    round_trip(&run.manifest);
    round_trip(&run.system);
    for c in BenchmarkComponent::ALL {
        round_trip(&c);
        assert_eq!(c.as_str().parse::<BenchmarkComponent>(), Ok(c));
    }
    for s in [
        RunStatus::Passed,
        RunStatus::Failed,
        RunStatus::Skipped,
        RunStatus::Timeout,
        RunStatus::Crashed,
    ] {
        round_trip(&s);
        assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
    }
    for r in [
        StopReason::TargetMet,
        StopReason::TimeCap,
        StopReason::SampleCap,
    ] {
        assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
    }
    for q in [Quality::Good, Quality::Noisy, Quality::Unreliable] {
        assert_eq!(serde_json::to_value(q).unwrap(), q.as_str());
    }
    assert!("disk".parse::<BenchmarkComponent>().is_err());
}

#[test]
fn contract_field_names_are_exact() {
    let v = serde_json::to_value(full_suite_run()).unwrap();
    let r = &v["benchmarks"][0];
    for key in [
        "status",
        "success",
        "stop_reason",
        "validation",
        "params",
        "metrics",
        "resources",
        "watchdog",
    ] {
        assert!(r.get(key).is_some(), "run result lacks {key}");
    }
    assert_eq!(r["status"], "timeout");
    assert_eq!(r["quality"], "noisy");
    assert_eq!(r["stop_reason"], "time_cap");
    assert_eq!(r["validation"]["passed"], false);
    assert!(r["validation"]["message"].is_string());
    let m = &r["metrics"][0];
    for key in ["name", "value", "unit", "higher_is_better", "tags", "stats"] {
        assert!(m.get(key).is_some(), "metric lacks {key}");
    }
    let stats = m["stats"].as_object().unwrap();
    let keys =
        "n mean median std min max p25 p50 p75 p90 p95 p99 ci95_low ci95_high outliers samples";
    for key in keys.split(' ') {
        assert!(stats.contains_key(key), "stats lacks {key}");
    }
    for key in ["peak_rss_bytes", "cpu_user_s", "cpu_sys_s", "energy_j"] {
        assert!(r["resources"].get(key).is_some(), "resources lacks {key}");
    }
    for stage in ["setup", "warmup", "measure", "validate"] {
        for key in ["status", "duration_s", "limit_s"] {
            assert!(
                r["watchdog"][stage].get(key).is_some(),
                "watchdog.{stage} lacks {key}"
            );
        }
    }
    assert!(v.get("id").is_some() && v.get("manifest").is_some());
}

#[test]
fn the_checked_in_example_export_loads() {
    let text = include_str!("data/example_export.json");
    let run = load_suite_run(text).expect("example export loads");
    assert_eq!(run.benchmarks.len(), 3);
    assert!(
        run.benchmarks
            .iter()
            .all(|b| b.status == RunStatus::Passed && b.success)
    );
    let cpu = &run.benchmarks[0];
    assert_eq!(cpu.spec.id, BenchmarkId::new("micro", "cpu_flops"));
    assert!(cpu.metrics.iter().all(|m| m.stats.is_some()));
    // Loading and saving again loses nothing (newer fields may be added).
    let again: serde_json::Value = serde_json::to_value(&run).unwrap();
    let original: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_contains(&again, &original, "$");
}

/// Every value in `old` is present, equal, at the same place in `new`.
fn assert_contains(new: &serde_json::Value, old: &serde_json::Value, path: &str) {
    use serde_json::Value;
    match (new, old) {
        (Value::Object(n), Value::Object(o)) => {
            for (k, v) in o {
                let child = n.get(k).unwrap_or_else(|| panic!("{path}.{k} was dropped"));
                assert_contains(child, v, &format!("{path}.{k}"));
            }
        }
        (Value::Array(n), Value::Array(o)) => {
            assert_eq!(n.len(), o.len(), "{path} changed length");
            for (i, (a, b)) in n.iter().zip(o).enumerate() {
                assert_contains(a, b, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(new, old, "{path} changed"),
    }
}

#[test]
fn a_seed_era_export_without_the_extensions_loads() {
    // The original shape: no status, stats, id or manifest.
    let text = r#"{
      "suite": "micro",
      "components": ["cpu"],
      "benchmarks": [
        {"spec": {"id": {"suite": "micro", "name": "cpu_flops"}, "components": ["cpu"], "kind": "synthetic",
                  "default_duration_seconds": 10, "params": null},
         "metrics": [{"name": "gflops", "value": 12.5, "unit": "GFLOP/s", "higher_is_better": true, "tags": null}],
         "success": true, "error_message": null,
         "start_time": "2025-12-05T14:00:01Z", "end_time": "2025-12-05T14:00:11Z", "system": null},
        {"spec": {"id": {"suite": "micro", "name": "mem_bandwidth"}, "components": ["ram"], "kind": "synthetic"},
         "metrics": [], "success": false, "error_message": "boom",
         "start_time": "2025-12-05T14:00:11Z", "end_time": "2025-12-05T14:00:12Z"}
      ],
      "metadata": null
    }"#;
    let run = load_suite_run(text).expect("seed-era export loads");
    assert_eq!(run.benchmarks[0].status, RunStatus::Passed);
    assert_eq!(run.benchmarks[1].status, RunStatus::Failed);
    assert_eq!(run.benchmarks[0].metrics[0].value, 12.5);
    assert!(run.benchmarks[0].metrics[0].stats.is_none());
    assert!(run.has_failures());
}

/// The schema is checked in: a change to the contract must show up as a
/// change to `tests/data/schema.json` in review. Regenerate with
/// `WARPT_UPDATE_SCHEMA=1 cargo test -p warpt-model`.
#[test]
fn schema_matches_the_checked_in_copy() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/schema.json");
    let current = serde_json::to_string_pretty(&suite_run_schema()).unwrap() + "\n";
    if std::env::var_os("WARPT_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &current).unwrap();
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == current,
        "the JSON Schema changed; if intended, run WARPT_UPDATE_SCHEMA=1 cargo test -p warpt-model and commit tests/data/schema.json"
    );
}

/// Run ids sort by start time; the suffix tells apart runs of one second.
#[test]
fn run_ids_are_the_start_time_and_a_suffix() {
    let at: jiff::Timestamp = "2026-11-25T10:15:00Z".parse().unwrap();
    assert_eq!(warpt_model::run_id(at, "1a2b3c"), "20261125T101500Z-1a2b3c");
    let later: jiff::Timestamp = "2026-11-25T10:15:01Z".parse().unwrap();
    assert!(warpt_model::run_id(at, "ffffff") < warpt_model::run_id(later, "000000"));
}
