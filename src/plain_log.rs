//! Log lines as an operator reads them on a terminal: one sentence each,
//! `mesh-host: warning: ...`, without the journal's structured fields.
//!
//! The fields (`MESH_EVENT`, `MESSAGE_ID`, `MESH_STEP`, ...) are for
//! journald and the tools that search it; printed after every sentence they
//! bury it. Other fields a log call names are kept, as `key=value`.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The event format of the command line's stderr: plain sentences.
#[derive(Debug, Clone, Copy)]
pub struct PlainLines {
    /// The target whose events are alerts (`ALERT: ` before the sentence);
    /// the logging set-up that owns the name hands it in.
    pub alert_target: &'static str,
}

impl<S, N> FormatEvent<S, N> for PlainLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        writer.write_str(&sentence(event, self.alert_target))?;
        writer.write_char('\n')
    }
}

/// The line for one event, without its newline.
fn sentence(event: &Event<'_>, alert_target: &str) -> String {
    let mut fields = Sentence::default();
    event.record(&mut fields);
    let meta = event.metadata();
    let level = if meta.target() == alert_target {
        "ALERT: "
    } else {
        match *meta.level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::INFO => "",
            _ => "debug: ",
        }
    };
    let mut line = format!("mesh-host: {level}{}", fields.message);
    for (key, value) in fields.other {
        line.push_str(&format!(" {key}={value}"));
    }
    line
}

/// Whether a field is one of the journal's own (kept out of the sentence).
fn journal_field(name: &str) -> bool {
    name.starts_with("MESH_") || name == "MESSAGE_ID"
}

#[derive(Default)]
struct Sentence {
    message: String,
    other: Vec<(&'static str, String)>,
}

impl Visit for Sentence {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            name if journal_field(name) => {}
            name => self.other.push((name, value.to_string())),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            name if journal_field(name) => {}
            name => self.other.push((name, format!("{value:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;

    /// Lines written by the plain format, captured.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn capture(f: impl FnOnce()) -> String {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || writer.clone())
                .event_format(PlainLines {
                    alert_target: crate::events::ALERT_TARGET,
                }),
        );
        tracing::subscriber::with_default(subscriber, f);
        let bytes = out.0.lock().expect("lock").clone();
        String::from_utf8(bytes).expect("utf-8")
    }

    #[test]
    fn journal_fields_stay_out_of_the_sentence() {
        let text = capture(|| {
            crate::mesh_event!(
                warn,
                crate::events::Event::StepFailed,
                MESH_STEP = %"gc",
                MESH_EXIT_STATUS = 3,
                "step gc exited with status 3"
            );
            tracing::info!(path = %"/etc/x", "wrote a file");
            crate::mesh_alert!(MESH_CONTAINER = %"web", "web WILL NOT START AGAIN");
        });
        assert_eq!(
            text,
            "mesh-host: warning: step gc exited with status 3\n\
             mesh-host: wrote a file path=/etc/x\n\
             mesh-host: ALERT: web WILL NOT START AGAIN\n"
        );
    }
}
