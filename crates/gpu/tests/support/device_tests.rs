//! The tests every GPU API runs against the CPU, written once:
//! `device_tests!(Device, open, "INDEX_VARIABLE")` expands to them in the test file of each
//! API (`opencl_vs_cpu.rs`, `cuda_vs_cpu.rs`), with `type Device`, `device_index()`,
//! `open(options)` and `shared_device()` for that file's own tests. The file defines what
//! differs per API:
//! - `fn check_every_path(device: &Device)` and `fn check_layout_paths(device: &Device)`:
//!   the shared cases' check through every way data reaches the device, and through those
//!   that table layouts and launch shapes are checked on (`process_is_the_only_path!()`
//!   defines both for an API whose one way in is `process`);
//! - `EVERY_CASE_SEED`, `WIDEST_GROUP` and `fn table_layouts()`;
//! - `fn more_device_list_checks(device: &Device, info: &Info)` (Info: the API's `list()` item),
//!   `fn more_segment_slab_checks(device: &Device)` and
//!   `fn more_layout_checks(device: &Device, copies: TableCopies)`: what only this API has.
//!
//! Included with `#[macro_use] #[path = "support/device_tests.rs"] mod device_tests;`.

/// `check_every_path` and `check_layout_paths` for an API with one way in, `process`: the
/// shared cases' check is `assert_same_on_host` (from `device_tests!`) for both.
#[allow(unused_macros)] // an API with more ways in defines its own checks
macro_rules! process_is_the_only_path {
    () => {
        /// The shared cases' check for `device`: one way in, `process`.
        fn check_every_path(
            device: &Device,
        ) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + '_ {
            move |algorithm: Algorithm, key: &[u8], operation: &GpuOperation, data: &[u8]| {
                assert_same_on_host(device, algorithm, key, operation, data)
            }
        }

        /// Table layouts and launch shapes go the same one way.
        fn check_layout_paths(
            device: &Device,
        ) -> impl Fn(Algorithm, &[u8], &GpuOperation, &[u8]) + Sync + '_ {
            check_every_path(device)
        }
    };
}

/// The shared tests; see the module's documentation for what the invoking file defines.
macro_rules! device_tests {
    ($device:ty, $open:path, $index_variable:literal) => {
        type Device = $device;

        fn device_index() -> usize {
            cases::device_index($index_variable)
        }

        /// A device of the test's own, with `options`, or `None` after saying why not.
        fn open(options: &OpenOptions) -> Option<Device> {
            $open(options)
        }

        /// One device with default options, shared by the tests that do not need their own.
        fn shared_device() -> Option<&'static Device> {
            static DEVICE: std::sync::OnceLock<Option<Device>> = std::sync::OnceLock::new();
            DEVICE
                .get_or_init(|| open(&OpenOptions::default()))
                .as_ref()
        }

        /// One case through `process` against the CPU.
        fn assert_same_on_host(
            device: &Device,
            algorithm: Algorithm,
            key: &[u8],
            operation: &GpuOperation,
            data: &[u8],
        ) {
            cases::assert_same_as_cpu(
                algorithm,
                key,
                operation,
                data,
                " via process",
                |material, operation, data| {
                    let mut result = data.to_vec();
                    device.process(material, operation, &mut result)?;
                    Ok(result)
                },
            );
        }

        on_shared_device! {
            every_cipher_operation_and_size_matches_the_cpu => |device| {
                cases::every_cipher_operation_and_size(EVERY_CASE_SEED, check_every_path(device))
            };
            ctr_counters_wrap_like_the_cpu =>
                |device| cases::ctr_wrap_cases(check_every_path(device));
            ctr_segments_match_the_cpu =>
                |device| cases::ctr_segment_cases(check_every_path(device));
            concurrent_calls_on_one_device_do_not_mix =>
                |device| cases::concurrent_cases(check_every_path(device));
            bad_lengths_are_refused_with_a_reason => |device| {
                cases::bad_length_cases(|key, operation, data| device.process(key, operation, data))
            };
        }

        #[test]
        fn slabs_chain_counters_and_cbc_blocks_across_every_queue() {
            // Slabs rotate over the queues (streams); on CUDA's device path CBC decryption
            // runs in chunks of the slab size, each needing the ciphertext block before it.
            let Some(device) = open(&cases::small_slab_options()) else {
                return;
            };
            assert_eq!(device.slab_bytes(), cases::TEST_SLAB_BYTES);
            cases::slab_edge_cases(check_every_path(&device));
        }

        #[test]
        fn ctr_segment_slabs_are_cut_between_segments() {
            let Some(device) = open(&cases::small_slab_options()) else {
                return;
            };
            cases::ctr_segment_slab_cases(check_every_path(&device));
            cases::segments_longer_than_a_slab_are_refused(|key, operation, data| {
                device.process(key, operation, data)
            });
            more_segment_slab_checks(&device);
        }

        #[test]
        fn per_lane_and_reduced_table_layouts_match_the_cpu() {
            for copies in table_layouts() {
                let options = OpenOptions {
                    table_copies: Some(copies),
                    ..OpenOptions::default()
                };
                let Some(device) = open(&options) else {
                    return;
                };
                assert_eq!(device.table_copies(), copies);
                more_layout_checks(&device, copies);
                cases::table_layout_cases(copies, check_layout_paths(&device));
            }
        }

        #[test]
        fn launch_geometry_does_not_change_results() {
            let Some(device) = open(&OpenOptions::default()) else {
                return;
            };
            cases::launch_geometry_cases(
                WIDEST_GROUP,
                |geometry| device.set_launch_geometry(geometry),
                || device.launch_geometry(),
                check_layout_paths(&device),
            );
        }

        #[test]
        fn device_list_describes_the_device() {
            let Some(device) = shared_device() else {
                return;
            };
            let devices = Device::list().unwrap();
            let info = &devices[device_index()];
            assert_eq!(info, device.info());
            assert_eq!(device.name(), info.name.trim());
            assert!(info.to_string().starts_with(&format!("#{} ", info.index)));
            more_device_list_checks(device, info);
        }

        #[test]
        fn compiled_kernels_are_cached_and_a_damaged_cache_is_recompiled() {
            if shared_device().is_none() {
                return;
            }
            cases::kernel_cache_cases(open, Device::program_origin, assert_same_on_host);
        }

        #[test]
        fn ghash_partial_sums_join_to_the_cpu_ghash() {
            let Some(device) = shared_device() else {
                return;
            };
            cases::ghash_cases(
                0x6768_6173,
                &cases::GHASH_SEGMENT_SIZES,
                |hash_key, data, segment_bytes| {
                    device.ghash_segments(hash_key, data, segment_bytes)
                },
            );
        }

        #[test]
        fn ghash_of_whole_ranges_joins_work_groups_on_the_device() {
            let Some(device) = shared_device() else {
                return;
            };
            cases::ghash_whole_cases(0x7768_6f6c, &cases::GHASH_WHOLE_SIZES, |hash_key, data| {
                parcrypt_gpu::GpuDevice::ghash_whole(device, hash_key, data)
            });
            // Small slabs: one segment per launch, each its own short work-group.
            let Some(small) = open(&cases::small_slab_options()) else {
                return;
            };
            cases::ghash_whole_cases(0x736d_616c, &[4096 * 3 + 17, 40_000], |hash_key, data| {
                parcrypt_gpu::GpuDevice::ghash_whole(&small, hash_key, data)
            });
        }

        #[test]
        fn gcm_text_and_hash_share_one_upload() {
            // Devices of their own: the upload count is the device's, and the shared
            // device's other tests would add to it.
            for options in [OpenOptions::default(), cases::gcm_slab_options()] {
                let Some(device) = open(&options) else {
                    return;
                };
                cases::gcm_pass_cases(
                    0x6763_6d70,
                    &cases::GCM_PASS_SIZES,
                    |key, operation, hash_key, direction, data| {
                        device.process_gcm(key, operation, hash_key, direction, data)
                    },
                    || device.uploaded_bytes(),
                );
            }
            // Slabs shorter than a segment: the hash on the host, the text still uploaded
            // once.
            let Some(small) = open(&OpenOptions {
                slab_bytes: 1024,
                ..OpenOptions::default()
            }) else {
                return;
            };
            cases::gcm_pass_cases(
                0x736d_6763,
                &[0, 17, 4096 + 5, 20_000],
                |key, operation, hash_key, direction, data| {
                    small.process_gcm(key, operation, hash_key, direction, data)
                },
                || small.uploaded_bytes(),
            );
        }

        #[test]
        fn ghash_slabs_of_whole_segments_rotate_over_the_queues() {
            let Some(device) = open(&cases::small_slab_options()) else {
                return;
            };
            // 4144-byte slabs: 4096 bytes of 1024- or 4096-byte segments, 4128 of 48-byte
            // ones.
            cases::ghash_cases(
                0x736c_6162,
                &[16, 48, 1024, 4096],
                |hash_key, data, segment_bytes| {
                    device.ghash_segments(hash_key, data, segment_bytes)
                },
            );
            for bad in [0, 24, cases::TEST_SLAB_BYTES + 16] {
                assert!(
                    matches!(
                        device.ghash_segments(&[1; 16], &[0; 64], bad),
                        Err(GpuError::InvalidInput(_))
                    ),
                    "{bad}-byte segments must be refused"
                );
            }
        }
    };
}
