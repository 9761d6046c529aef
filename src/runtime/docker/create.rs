//! One create request, of a container spec's body, under a name: the
//! image of a declared platform made present first
//! ([`super::images::as_platform`]), the answer's missing image told
//! from the rest.

use bollard::errors::Error as BollardError;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::CreateContainerOptions;

use super::client::DockerRuntime;
use crate::runtime::{ContainerId, RuntimeError};

/// One create request of `body` (of `image`) under `name`.
pub(super) async fn create_as(
    rt: &DockerRuntime,
    name: &str,
    image: &str,
    platform: Option<&str>,
    body: ContainerCreateBody,
) -> Result<ContainerId, RuntimeError> {
    // The image of a declared platform, pulled as that one's when the
    // one present is another's, or refused naming the field.
    if let Some(platform) = platform {
        super::images::as_platform(rt, image, platform).await?;
    }
    let options = CreateContainerOptions {
        name: Some(name.to_owned()),
        platform: platform.unwrap_or_default().to_owned(),
    };
    match rt.docker.create_container(Some(options), body).await {
        Ok(created) => Ok(ContainerId(created.id)),
        Err(BollardError::DockerResponseServerError {
            status_code: 404,
            message,
        }) if message.to_ascii_lowercase().contains("no such image") => {
            Err(RuntimeError::NotFound {
                what: format!("image {image} (for container {name})"),
            })
        }
        Err(err) => Err(rt.error(
            &format!("create container {name}"),
            &format!("container {name}"),
            err,
        )),
    }
}
