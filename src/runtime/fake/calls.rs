//! What the fake records of each call made to it.

/// One recorded trait call, with the name or image it addressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// [`ContainerRuntime::create`](crate::runtime::ContainerRuntime::create) of that container name.
    Create(String),
    /// [`ContainerRuntime::start`](crate::runtime::ContainerRuntime::start).
    Start(String),
    /// [`ContainerRuntime::stop`](crate::runtime::ContainerRuntime::stop).
    Stop(String),
    /// [`ContainerRuntime::kill`](crate::runtime::ContainerRuntime::kill).
    Kill(String),
    /// [`ContainerRuntime::remove`](crate::runtime::ContainerRuntime::remove).
    Remove(String),
    /// [`ContainerRuntime::remove_stopped`](crate::runtime::ContainerRuntime::remove_stopped).
    RemoveStopped(String),
    /// [`ContainerRuntime::rename`](crate::runtime::ContainerRuntime::rename): from, to.
    Rename(String, String),
    /// [`ContainerRuntime::wait_exit`](crate::runtime::ContainerRuntime::wait_exit).
    WaitExit(String),
    /// [`RuntimeView::inspect`](crate::runtime::RuntimeView::inspect).
    Inspect(String),
    /// [`RuntimeView::list_managed`](crate::runtime::RuntimeView::list_managed).
    ListManaged,
    /// [`RuntimeView::image_present`](crate::runtime::RuntimeView::image_present) of that image.
    ImagePresent(String),
    /// [`ContainerRuntime::pull`](crate::runtime::ContainerRuntime::pull) of that image.
    Pull(String),
    /// [`RuntimeView::cgroup_driver`](crate::runtime::RuntimeView::cgroup_driver).
    CgroupDriver,
    /// [`RuntimeView::events`](crate::runtime::RuntimeView::events) for those names.
    Events(Vec<String>),
    /// [`RuntimeView::output`](crate::runtime::RuntimeView::output) of that container.
    Output(String),
    /// [`RuntimeView::network`](crate::runtime::RuntimeView::network).
    Network(String),
    /// [`ContainerRuntime::create_network`](crate::runtime::ContainerRuntime::create_network).
    CreateNetwork(String),
    /// [`ContainerRuntime::remove_network`](crate::runtime::ContainerRuntime::remove_network).
    RemoveNetwork(String),
    /// [`ContainerRuntime::connect`](crate::runtime::ContainerRuntime::connect): container, network.
    Connect(String, String),
    /// [`ContainerRuntime::disconnect`](crate::runtime::ContainerRuntime::disconnect): container, network.
    Disconnect(String, String),
    /// [`RuntimeView::volume`](crate::runtime::RuntimeView::volume).
    Volume(String),
    /// [`ContainerRuntime::create_volume`](crate::runtime::ContainerRuntime::create_volume).
    CreateVolume(String),
}
