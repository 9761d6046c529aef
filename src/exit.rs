//! The exit codes of every command: one type, so that the daemon's answers,
//! `--local` and the command line end the same way, and so that
//! docs/exit-codes.md, the man page and the Ansible collection's
//! `module_utils` can be held to it by a test (`tests/exit_codes.rs`).

/// How a command ends. The numbers are the contract's (CONTRACT "Command
/// line"): `2` is also clap's code for misused arguments, `130` is what a
/// shell reports of a command ended by SIGINT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Exit {
    /// The command did what was asked (`diff`: nothing would change).
    Ok = 0,
    /// The command ran and failed (`diff`: something would change).
    Failed = 1,
    /// The input was refused or the command misused; nothing changed.
    Refused = 2,
    /// `status` only: something needs an operator's attention
    /// ([`crate::attention`]).
    Attention = 3,
    /// `run` interrupted (Ctrl-C): the fire is left to the daemon.
    Interrupted = 130,
}

impl Exit {
    /// Every exit code, in order.
    pub const ALL: [Exit; 5] = [
        Exit::Ok,
        Exit::Failed,
        Exit::Refused,
        Exit::Attention,
        Exit::Interrupted,
    ];

    /// The process's exit status.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The name the Ansible collection gives it (`EXIT_OK`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Exit::Ok => "EXIT_OK",
            Exit::Failed => "EXIT_FAILED",
            Exit::Refused => "EXIT_REFUSED",
            Exit::Attention => "EXIT_ATTENTION",
            Exit::Interrupted => "EXIT_INTERRUPTED",
        }
    }

    /// `Ok` when `ok`, else `Failed`.
    pub const fn ok_or_failed(ok: bool) -> Exit {
        if ok {
            Exit::Ok
        } else {
            Exit::Failed
        }
    }

    /// The exit named by a status a daemon sent (`control::Response`):
    /// a number this build does not know is a failure.
    pub fn of_code(code: u8) -> Exit {
        Exit::ALL
            .into_iter()
            .find(|e| e.code() == code)
            .unwrap_or(Exit::Failed)
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_as_itself_and_an_unknown_one_as_failed() {
        for e in Exit::ALL {
            assert_eq!(Exit::of_code(e.code()), e);
        }
        assert_eq!(Exit::of_code(77), Exit::Failed);
    }
}
