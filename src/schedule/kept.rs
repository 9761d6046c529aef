//! A step as the scheduler keeps it between fires: built while its next
//! fire is within the horizon, packed into one block of bytes beyond it.
//!
//! A built step is about twenty blocks on the heap (its container's spec
//! with its strings and labels, the containers it holds, its id). Most
//! steps of a large node fire daily or less and spend nearly all their
//! time beyond the horizon, where nothing reads their definition: packed,
//! each is one block of a few hundred bytes, unpacked again when it comes
//! within the horizon, fires, or is asked for (docs/benchmarks.md has the
//! figures). What a step holds to be listed (its id and timing) stays as
//! it is. The apply packs each step as soon as it is built
//! ([`KeptStep::packed`]), so thousands of steps are never all built at
//! once: the daemon's resident memory follows the apply's peak, not what
//! it holds after it.
//!
//! A step is packed only if its bytes read back as the same definition,
//! checked as it is packed: a packed step always unpacks.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::runtime::ContainerSpec;
use crate::schedule::jobs::StepTiming;
use crate::schedule::step::{ScheduledStep, StepDef};

/// A step's definition as written into its block (the fields of
/// [`StepDef`] but the specs of the containers it holds, which are shared
/// with every other step holding them and kept beside the block).
#[derive(Serialize)]
struct DefOut<'a> {
    id: &'a str,
    module: Option<&'a str>,
    timeout: Option<Duration>,
    holds: &'a [(String, String)],
    spec: &'a ContainerSpec,
}

/// [`DefOut`] read back; the same fields in the same order.
#[derive(Deserialize)]
struct DefIn {
    id: String,
    module: Option<String>,
    timeout: Option<Duration>,
    holds: Vec<(String, String)>,
    spec: ContainerSpec,
}

/// The first fields of [`DefIn`]: what is read of a packed step to name
/// it in a log line, the rest of the block left unread.
#[derive(Deserialize)]
struct Head {
    #[allow(dead_code)]
    id: String,
    module: Option<String>,
}

/// A [`StepDef`] packed: its fields as one block of bytes, and the specs of
/// the containers it holds, shared.
#[derive(Clone, PartialEq, Eq)]
pub struct PackedDef {
    bytes: Box<[u8]>,
    hold_specs: Box<[Arc<ContainerSpec>]>,
}

impl std::fmt::Debug for PackedDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedDef")
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// `def` written into `out` (cleared first).
fn write(def: &StepDef, out: &mut Vec<u8>) -> Result<(), postcard::Error> {
    out.clear();
    let fields = DefOut {
        id: &def.id,
        module: def.module.as_deref(),
        timeout: def.timeout,
        holds: &def.holds,
        spec: &def.spec,
    };
    let written = postcard::to_extend(&fields, std::mem::take(out))?;
    *out = written;
    Ok(())
}

impl PackedDef {
    /// `def` packed, if its bytes read back as `def` (`None` otherwise: the
    /// caller keeps it built).
    pub fn pack(def: &StepDef) -> Option<PackedDef> {
        // Written into this thread's one buffer, then copied out in one
        // block of its size: not a vector grown and shrunk for each of
        // thousands of steps, among the apply's own blocks.
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let bytes = SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            write(def, &mut scratch).ok()?;
            Some(Box::<[u8]>::from(scratch.as_slice()))
        })?;
        let packed = PackedDef {
            bytes,
            hold_specs: def.hold_specs.clone(),
        };
        (packed.unpack()?.as_ref() == def).then_some(packed)
    }

    /// The definition packed.
    pub fn unpack(&self) -> Option<Arc<StepDef>> {
        let d: DefIn = postcard::from_bytes(&self.bytes).ok()?;
        Some(Arc::new(StepDef {
            id: d.id,
            module: d.module,
            spec: Arc::new(d.spec),
            timeout: d.timeout,
            holds: d.holds,
            hold_specs: self.hold_specs.clone(),
        }))
    }

    /// Whether this is `def` packed; `scratch` is written over (one buffer
    /// for a whole declaration's steps, not one each).
    pub fn is(&self, def: &StepDef, scratch: &mut Vec<u8>) -> bool {
        write(def, scratch).is_ok() && *scratch == *self.bytes && self.hold_specs == def.hold_specs
    }

    /// The step's module, read from the start of the block alone.
    pub fn module(&self) -> Option<String> {
        postcard::take_from_bytes::<Head>(&self.bytes)
            .ok()
            .and_then(|(head, _)| head.module)
    }

    /// The bytes of the block.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the block is empty (never: a step has an id).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A step's definition as kept.
#[derive(Debug, Clone)]
enum Def {
    Built(Arc<StepDef>),
    Packed(PackedDef),
}

/// A scheduled step as the scheduler keeps it: its timing as it is, its
/// definition built or packed. Not `PartialEq`: a step built and the same
/// step packed are alike, which [`KeptStep::is`] says.
#[derive(Debug, Clone)]
pub struct KeptStep {
    /// When it is due (shared with the job table); its id is the step's.
    pub timing: Arc<StepTiming>,
    def: Def,
}

impl From<ScheduledStep> for KeptStep {
    fn from(s: ScheduledStep) -> Self {
        KeptStep {
            timing: s.timing,
            def: Def::Built(s.def),
        }
    }
}

impl KeptStep {
    /// `step` packed (kept built if it does not pack): what the apply
    /// hands the scheduler, so that thousands of steps are never all
    /// built at once.
    pub fn packed(step: ScheduledStep) -> KeptStep {
        let mut kept = KeptStep::from(step);
        kept.pack();
        kept
    }

    /// The step's id.
    pub fn id(&self) -> &str {
        &self.timing.id
    }

    /// Whether its definition is packed.
    pub fn is_packed(&self) -> bool {
        matches!(self.def, Def::Packed(_))
    }

    /// Its definition, unpacked if it is packed (and kept as it is).
    /// `None` only if a packed block no longer reads back, which its
    /// check at packing rules out.
    pub fn def(&self) -> Option<Arc<StepDef>> {
        match &self.def {
            Def::Built(def) => Some(def.clone()),
            Def::Packed(packed) => packed.unpack(),
        }
    }

    /// The step, its definition unpacked if it is packed.
    pub fn step(&self) -> Option<ScheduledStep> {
        Some(ScheduledStep {
            def: self.def()?,
            timing: self.timing.clone(),
        })
    }

    /// Its module, without unpacking the whole definition.
    pub fn module(&self) -> Option<String> {
        match &self.def {
            Def::Built(def) => def.module.clone(),
            Def::Packed(packed) => packed.module(),
        }
    }

    /// Cut its packed block short, so that it no longer reads back (tests
    /// of what a scheduler does with one: never a silent loss).
    #[cfg(test)]
    pub fn damage(&mut self) {
        if let Def::Packed(packed) = &mut self.def {
            packed.bytes = packed.bytes[..packed.bytes.len() / 2].into();
        }
    }

    /// Keep it packed (kept built if it does not pack).
    pub fn pack(&mut self) {
        if let Def::Built(def) = &self.def {
            if let Some(packed) = PackedDef::pack(def) {
                self.def = Def::Packed(packed);
            }
        }
    }

    /// Keep `def`, its definition unpacked, built.
    pub fn keep_built(&mut self, def: Arc<StepDef>) {
        if self.is_packed() {
            self.def = Def::Built(def);
        }
    }

    /// The specs of the containers it holds (shared, never packed).
    pub fn hold_specs(&self) -> &[Arc<ContainerSpec>] {
        match &self.def {
            Def::Built(def) => &def.hold_specs,
            Def::Packed(packed) => &packed.hold_specs,
        }
    }

    /// Whether `other` is this step declared alike, each built or packed;
    /// `scratch` as in [`PackedDef::is`].
    pub fn is(&self, other: &KeptStep, scratch: &mut Vec<u8>) -> bool {
        self.timing == other.timing
            && match (&self.def, &other.def) {
                (Def::Built(a), Def::Built(b)) => a == b,
                (Def::Packed(a), Def::Packed(b)) => a == b,
                (Def::Packed(packed), Def::Built(def)) | (Def::Built(def), Def::Packed(packed)) => {
                    packed.is(def, scratch)
                }
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{HealthSpec, JournalLog, MountSpec, PortSpec, ProcessSpec, RestartPolicy};
    use proptest::prelude::*;

    fn def(name: &str) -> StepDef {
        let mut spec = ContainerSpec {
            name: name.to_string(),
            image: "img@sha256:00".into(),
            command: Some(vec!["sh".into(), "-c".into(), "gc ✓".into()]),
            env: vec![("A".into(), "1=2".into())],
            ports: vec![PortSpec {
                host: Some(53),
                container: 53,
                protocol: "udp",
                address: Some("::1".parse().expect("address")),
            }],
            health: Some(Box::new(HealthSpec::Check {
                command: None,
                interval: Some(Duration::from_millis(1500)),
                timeout: None,
                retries: Some(3),
                start_period: None,
            })),
            journal: Some(Box::new(JournalLog {
                labels: vec!["mesh.step".into()],
                tag: "t".into(),
            })),
            restart: RestartPolicy::No,
            ..ContainerSpec::default()
        };
        spec.labels
            .insert("mesh-host.managed".into(), "true".into());
        spec.labels.insert("app".into(), "x".into());
        spec.process = ProcessSpec {
            init: true,
            memory: Some(1 << 30),
            ..ProcessSpec::default()
        }
        .into();
        StepDef {
            id: "gc".into(),
            module: Some("registry".into()),
            spec: Arc::new(spec),
            timeout: Some(Duration::from_secs(300)),
            holds: vec![("web".into(), "registry-web".into())],
            hold_specs: vec![Arc::new(ContainerSpec {
                name: "registry-web".into(),
                ..ContainerSpec::default()
            })]
            .into(),
        }
    }

    #[test]
    fn a_packed_definition_reads_back_as_itself_and_names_its_module() {
        let d = def("gc-run");
        let packed = PackedDef::pack(&d).expect("packs");
        assert_eq!(*packed.unpack().expect("unpacks"), d);
        assert_eq!(packed.module().as_deref(), Some("registry"));
        let mut scratch = Vec::new();
        assert!(packed.is(&d, &mut scratch));
        assert!(
            packed.len() < 400,
            "one small block: {} bytes",
            packed.len()
        );
    }

    #[test]
    fn a_packed_definition_is_not_one_that_differs_in_what_it_holds_or_runs() {
        let d = def("gc-run");
        let packed = PackedDef::pack(&d).expect("packs");
        let mut scratch = Vec::new();
        let mut renamed = d.clone();
        renamed.holds[0].1 = "registry-web-2".into();
        assert!(
            !packed.is(&renamed, &mut scratch),
            "a held container renamed"
        );
        let mut respecced = d.clone();
        respecced.hold_specs = vec![Arc::new(ContainerSpec {
            name: "registry-web".into(),
            image: "other".into(),
            ..ContainerSpec::default()
        })]
        .into();
        assert!(
            !packed.is(&respecced, &mut scratch),
            "a held container's spec"
        );
        let mut other = d.clone();
        Arc::make_mut(&mut other.spec)
            .env
            .push(("B".into(), "2".into()));
        assert!(!packed.is(&other, &mut scratch), "its own container's spec");
    }

    #[test]
    fn a_kept_step_is_built_until_packed_and_built_again_when_asked() {
        let timing = Arc::new(StepTiming {
            id: "gc".into(),
            cron: crate::cron::CronSchedule::parse("0 3 * * *").expect("cron"),
            zone: chrono_tz::UTC,
            fingerprint: "f".into(),
            delay: Duration::ZERO,
            catch_up: false,
        });
        let step = ScheduledStep {
            def: Arc::new(def("gc-run")),
            timing,
        };
        let mut kept = KeptStep::from(step.clone());
        assert!(!kept.is_packed());
        kept.pack();
        assert!(kept.is_packed());
        assert_eq!(kept.id(), "gc");
        assert_eq!(kept.module().as_deref(), Some("registry"));
        assert_eq!(kept.step().as_ref(), Some(&step));
        let built = KeptStep::from(step.clone());
        assert!(kept.is(&built, &mut Vec::new()) && built.is(&kept, &mut Vec::new()));
        assert!(kept.is(&KeptStep::packed(step.clone()), &mut Vec::new()));
        kept.keep_built(kept.def().expect("unpacks"));
        assert!(!kept.is_packed());
        assert!(kept.is(&built, &mut Vec::new()));
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[a-z0-9=/ é.-]{0,12}").expect("regex")
    }

    prop_compose! {
        fn any_def()(
            name in text(),
            image in text(),
            command in proptest::option::of(proptest::collection::vec(text(), 0..4)),
            env in proptest::collection::vec((text(), text()), 0..4),
            mounts in proptest::collection::vec((text(), text(), any::<bool>()), 0..3),
            ports in proptest::collection::vec((any::<Option<u16>>(), any::<u16>(), any::<bool>()), 0..3),
            labels in proptest::collection::vec((text(), text()), 0..5),
            user in proptest::option::of(text()),
            memory in any::<Option<u64>>(),
            cap_add in proptest::collection::vec(text(), 0..3),
            module in proptest::option::of(text()),
            timeout in proptest::option::of(any::<u32>()),
            holds in proptest::collection::vec((text(), text()), 0..3),
        ) -> StepDef {
            let mut spec = ContainerSpec {
                name,
                image,
                command,
                env,
                mounts: mounts.into_iter().map(|(source, target, read_only)| MountSpec { source, target, read_only }).collect(),
                ports: ports.into_iter().map(|(host, container, udp)| PortSpec {
                    host, container, protocol: if udp { "udp" } else { "tcp" }, address: None,
                }).collect(),
                user,
                labels: labels.into_iter().collect(),
                ..ContainerSpec::default()
            };
            spec.process = ProcessSpec { memory, cap_add, ..ProcessSpec::default() }.into();
            StepDef {
                id: "s".into(),
                module,
                spec: Arc::new(spec),
                timeout: timeout.map(|t| Duration::from_millis(t.into())),
                holds,
                hold_specs: Default::default(),
            }
        }
    }

    proptest! {
        #[test]
        fn any_definition_packs_and_reads_back_as_itself(d in any_def()) {
            let packed = PackedDef::pack(&d).expect("packs");
            prop_assert_eq!(&*packed.unpack().expect("unpacks"), &d);
            prop_assert!(packed.is(&d, &mut Vec::new()));
            prop_assert_eq!(packed.module(), d.module.clone());
        }

    }
}
