//! The `mesh-host` binary: a thin shim over the library's command line.
fn main() -> std::process::ExitCode {
    mesh_host::cli::main()
}
