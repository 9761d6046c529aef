//! `mesh-host run STEP`: the fire's report, from the daemon's scheduler or
//! from a fire in the command's own process (`--local`), and why a step
//! could not be fired.

use super::{Answer, Failure};
use crate::exit::Exit;
use crate::schedule::fire::FireReport;

impl Answer for FireReport {
    /// 0 only when the step succeeded and every container it held runs
    /// again.
    fn exit(&self) -> Exit {
        Exit::ok_or_failed(self.ok())
    }

    fn text(&self) -> String {
        crate::render::fire(self)
    }
}

/// Why a step could not be fired (or suspended, resumed, planned), as the
/// scheduler said it: a step not declared or suspended is refused (the
/// command was misused), anything else failed.
pub fn refusal(message: String) -> Failure {
    if message.contains("no scheduled step") || message.contains("is suspended") {
        Failure::refused(message)
    } else {
        Failure::failed(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_not_declared_or_suspended_is_refused_anything_else_failed() {
        assert_eq!(refusal("no scheduled step gc".into()).exit, Exit::Refused);
        assert_eq!(
            refusal("step gc is suspended since …".into()).exit,
            Exit::Refused
        );
        assert_eq!(refusal("the runtime is away".into()).exit, Exit::Failed);
    }
}
