//! What Docker takes from the image and Podman's compatible API (4.3)
//! does not, filled in from the image before a create on Podman, so that
//! a declaration means the same on both: an empty entrypoint
//! (`"entrypoint": []`). Docker clears the image's and runs the image's
//! command; Podman ignores an empty list, and reads `[""]` as "no
//! entrypoint and no command". So Podman is sent `[""]` with the command
//! given, or the image's own.
//!
//! (A health check of timings alone is the other such case, and is not
//! filled in: Podman's compatible image inspection carries no health
//! check to take the test from. docs/podman.md says so.)
//!
//! Verified against Docker 20.10 and Podman 4.3 on the sandbox node
//! (tests/compose_node.rs holds both).

use bollard::models::ContainerCreateBody;

use super::client::DockerRuntime;
use crate::runtime::ContainerSpec;

/// Fill `body` in from `spec.image`'s configuration as Docker would; an
/// image that cannot be read leaves `body` as it is (the create then says
/// what is wrong).
pub(super) async fn fill(rt: &DockerRuntime, spec: &ContainerSpec, body: &mut ContainerCreateBody) {
    if !spec.process.entrypoint.as_ref().is_some_and(Vec::is_empty) {
        return;
    }
    body.entrypoint = Some(vec![String::new()]);
    if body.cmd.is_none() {
        if let Ok(image) = rt.docker.inspect_image(&spec.image).await {
            body.cmd = image.config.and_then(|c| c.cmd);
        }
    }
}
