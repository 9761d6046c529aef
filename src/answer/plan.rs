//! `plan STEP`'s answer: what a fire of the step would do now
//! ([`crate::schedule::plan::Plan`]), the same from the daemon and
//! `--local`.

use super::Answer;
use crate::exit::Exit;
use crate::schedule::plan::Plan;

impl Answer for Plan {
    fn exit(&self) -> Exit {
        Exit::Ok
    }

    fn text(&self) -> String {
        self.render()
    }
}
