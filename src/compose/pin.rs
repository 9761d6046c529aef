//! Each image's tag pinned to its digest, as the runtime knows it: the
//! local image's repository digest, else one pulled now. Written
//! `REPO:TAG@sha256:…`, so that the tag stays readable.

use crate::runtime::ContainerRuntime;

/// What pinning asks of the runtime.
#[async_trait::async_trait]
pub trait Pinner: Send + Sync {
    /// The repository digests (`REPO@sha256:…`) of the local image
    /// `reference`; `None` when there is no such image.
    async fn repo_digests(&self, reference: &str) -> Result<Option<Vec<String>>, String>;
    /// Pull `reference` (a tag).
    async fn pull(&self, reference: &str) -> Result<(), String>;
}

#[async_trait::async_trait]
impl<T: ContainerRuntime + ?Sized> Pinner for T {
    async fn repo_digests(&self, reference: &str) -> Result<Option<Vec<String>>, String> {
        crate::runtime::RuntimeView::repo_digests(self, reference)
            .await
            .map_err(|e| crate::runtime::explain(&e))
    }

    async fn pull(&self, reference: &str) -> Result<(), String> {
        ContainerRuntime::pull(self, reference)
            .await
            .map_err(|e| crate::runtime::explain(&e))
    }
}

/// `REPO` and `TAG` of a reference (`latest` when it has none).
pub fn split(reference: &str) -> (&str, &str) {
    let slash = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[slash..].rfind(':') {
        Some(i) => (&reference[..slash + i], &reference[slash + i + 1..]),
        None => (reference, "latest"),
    }
}

/// The digest of `repo` among `digests`: its own entry, else the one of
/// Docker Hub's long name for it, else the first.
fn digest_of(repo: &str, digests: &[String]) -> Option<String> {
    let entry = |d: &String| d.split_once('@').map(|(r, h)| (r.to_owned(), h.to_owned()));
    let all: Vec<(String, String)> = digests.iter().filter_map(entry).collect();
    let long = if repo.contains('/') {
        format!("docker.io/{repo}")
    } else {
        format!("docker.io/library/{repo}")
    };
    all.iter()
        .find(|(r, _)| r == repo)
        .or_else(|| all.iter().find(|(r, _)| *r == long))
        .or_else(|| all.first())
        .map(|(_, h)| h.clone())
}

/// `image` pinned: as written when it already names a digest.
pub async fn pin(pinner: &dyn Pinner, image: &str) -> Result<String, String> {
    if image.contains("@sha256:") {
        return Ok(image.to_owned());
    }
    let (repo, tag) = split(image);
    let digests = match pinner.repo_digests(image).await? {
        Some(d) if !d.is_empty() => d,
        _ => {
            pinner
                .pull(image)
                .await
                .map_err(|e| format!("cannot be pinned: not present, and the pull failed: {e}"))?;
            pinner.repo_digests(image).await?.unwrap_or_default()
        }
    };
    let digest = digest_of(repo, &digests).ok_or_else(|| {
        "cannot be pinned: the runtime knows no repository digest of it (an image built here \
         and never pushed): push it, then import again"
            .to_owned()
    })?;
    Ok(format!("{repo}:{tag}@{digest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_splits_into_repo_and_tag() {
        assert_eq!(split("busybox"), ("busybox", "latest"));
        assert_eq!(split("busybox:1.36"), ("busybox", "1.36"));
        assert_eq!(
            split("localhost:5000/app"),
            ("localhost:5000/app", "latest")
        );
        assert_eq!(split("localhost:5000/app:2"), ("localhost:5000/app", "2"));
    }

    #[test]
    fn the_digest_of_the_repo_itself_is_taken_first() {
        let h = |n: u8| format!("sha256:{}", format!("{n:02x}").repeat(32));
        let digests = vec![
            format!("other/app@{}", h(1)),
            format!("docker.io/library/busybox@{}", h(2)),
        ];
        assert_eq!(digest_of("busybox", &digests), Some(h(2)));
        let digests = vec![
            format!("busybox@{}", h(3)),
            format!("docker.io/library/busybox@{}", h(2)),
        ];
        assert_eq!(digest_of("busybox", &digests), Some(h(3)));
        assert_eq!(digest_of("x", &[]), None);
    }
}
