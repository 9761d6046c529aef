//! Scheduled steps at apply: installed, never run.
//!
//! An apply hands each scheduled step to the scheduler (through the
//! report's `steps`) once its image is present, so a fire never waits on a
//! pull; the step itself runs only when its schedule says. A step the last
//! apply installed and that is declared exactly alike now is `unchanged`.
//! A step that cannot be installed is reported but fails nothing (CONTRACT
//! "Apply").

use super::pull::Ensured;
use super::report::{Action, ReportLine};
use super::Run;
use crate::declaration::{Container, Resource, Role, Step};
use crate::schedule::step::scheduled_step;

impl Run<'_> {
    /// A scheduled step: handed to the scheduler with its image present.
    /// Never fails the apply.
    pub(super) async fn scheduled(&mut self, res: &Resource, c: &Container) {
        let id = res.id.as_str();
        let Role::Scheduled(schedule) = &c.role else {
            return self.push(
                id,
                Action::Failed,
                Some("not found among the scheduled steps".to_string()),
            );
        };
        let step = Step {
            resource: res,
            container: c,
            schedule,
        };
        match scheduled_step(&self.builds, &step, &self.machine) {
            Ok(_) if self.preview => {
                // Installing pulls its image: a preview only says whether
                // the step is new or changed.
                let action = if self.declared_alike_before(res) {
                    Action::Unchanged
                } else {
                    Action::Installed
                };
                self.lines.push(ReportLine::new(id, action, None));
            }
            Ok(step) => {
                let mut action = Action::Installed;
                let ensured = self.puller.lock().await.ensure(c.image.as_str()).await;
                let reason = match ensured {
                    Ok(Ensured::Present) => {
                        if self.declared_alike_before(res) {
                            action = Action::Unchanged;
                        }
                        None
                    }
                    Ok(Ensured::Pulled) => Some("image pulled".to_string()),
                    Err(e) => Some(format!(
                        "its image is not present and could not be pulled (tried again at the next apply): {e}"
                    )),
                };
                self.steps.push(step);
                self.lines.push(ReportLine::new(id, action, reason));
            }
            Err(e) => {
                // Reported, but never fails the apply (CONTRACT "Apply").
                self.lines.push(ReportLine::new(
                    id,
                    Action::Failed,
                    Some(format!("schedule not installed: {}", e.reason)),
                ));
            }
        }
    }

    /// Whether the last apply installed step `res` declared exactly as now.
    ///
    /// Only this resource is serialised: its canonical JSON is the same
    /// alone as within the whole declaration's, and serialising the whole
    /// declaration per step cost O(steps × resources).
    fn declared_alike_before(&self, res: &Resource) -> bool {
        let Some(before) = self.steps_before.get(res.id.as_str()) else {
            return false;
        };
        serde_json::to_value(res).is_ok_and(|now| &now == before)
    }
}
