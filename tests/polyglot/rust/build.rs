//! Rust code for llmworker/v1/*.proto, made at build time by tonic-prost-build with the protoc
//! of the protoc-bin-vendored crate (no system protoc). google.rpc.Status, which
//! CallResult.error holds, is tonic-types' own type (extern_path), so its helpers
//! (RpcStatusExt: get_details_error_info …) read it; google.protobuf.* is prost-types'.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from("../../../proto");
    let protos = ["tool.proto", "tool_registry.proto", "tool_service.proto"]
        .map(|name| root.join("llmworker/v1").join(name));
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_server(false)
        .extern_path(".google.rpc", "::tonic_types::pb")
        .compile_with_config(
            config,
            &protos,
            &[root, protoc_bin_vendored::include_path()?],
        )?;
    Ok(())
}
