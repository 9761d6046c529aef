//! The kernel's cgroup files, read as untrusted text.
//!
//! Each parser takes a file's content (already bounded in size by the
//! reader, [`super::cgroup`]) and returns the figure it holds, or `None`
//! when the text is not what the kernel writes: a figure is never made up
//! from a line that does not read right, and nothing of the text is ever
//! echoed. Every number is a `u64` of at most 20 digits; sums are checked.

/// The most lines a file is looked at: the kernel writes a few per device
/// (`io.stat`, `blkio.*`) or per key (`memory.events`, `cpu.stat`).
pub const MAX_LINES: usize = 4096;

/// A number as the kernel writes one: decimal digits only, 1 to 20 of them,
/// no sign, no space, within `u64`.
pub fn number(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A file holding one number and a newline (`memory.peak`,
/// `memory.max_usage_in_bytes`, `cpuacct.usage`).
pub fn single(text: &str) -> Option<u64> {
    let mut lines = text.lines();
    let value = number(lines.next()?.trim_end())?;
    lines.all(str::is_empty).then_some(value)
}

/// The value of `key` in a file of `key value` lines (`cpu.stat`,
/// `memory.events`, `memory.oom_control`, `cpuacct.stat`). `None` when the
/// key is absent, given twice, or its value is not a number.
pub fn keyed(text: &str, key: &str) -> Option<u64> {
    let mut found = None;
    for line in text.lines().take(MAX_LINES) {
        let mut words = line.split(' ');
        if words.next() != Some(key) {
            continue;
        }
        let value = number(words.next()?)?;
        if words.next().is_some() || found.is_some() {
            return None;
        }
        found = Some(value);
    }
    found
}

/// Bytes read and written, summed over devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Io {
    /// Bytes read.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
}

impl Io {
    fn add(self, read: u64, written: u64) -> Option<Io> {
        Some(Io {
            read: self.read.checked_add(read)?,
            written: self.written.checked_add(written)?,
        })
    }
}

/// A device as the kernel names one: `MAJOR:MINOR`.
fn device(word: &str) -> bool {
    word.split_once(':')
        .is_some_and(|(major, minor)| number(major).is_some() && number(minor).is_some())
}

/// cgroup v2's `io.stat`: one line per device,
/// `MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N`; keys it does
/// not know are passed over (the kernel adds some), a line that is not a
/// device's makes the whole file unreadable.
pub fn io_stat(text: &str) -> Option<Io> {
    let mut io = Io::default();
    for line in text.lines().take(MAX_LINES) {
        if line.is_empty() {
            continue;
        }
        let mut words = line.split(' ');
        if !device(words.next()?) {
            return None;
        }
        let (mut read, mut written) = (0, 0);
        for pair in words {
            let (key, value) = pair.split_once('=')?;
            let value = number(value)?;
            match key {
                "rbytes" => read = value,
                "wbytes" => written = value,
                _ => {}
            }
        }
        io = io.add(read, written)?;
    }
    Some(io)
}

/// cgroup v1's `blkio.throttle.io_service_bytes[_recursive]`: lines
/// `MAJ:MIN Read N`, `MAJ:MIN Write N` (and `Sync`, `Async`, `Discard`,
/// `Total`, which are not added), closed by `Total N` over all devices.
pub fn blkio(text: &str) -> Option<Io> {
    let mut io = Io::default();
    for line in text.lines().take(MAX_LINES) {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            [] | [""] => {}
            ["Total", n] => {
                number(n)?;
            }
            [dev, op, n] if device(dev) => {
                let n = number(n)?;
                io = match *op {
                    "Read" => io.add(n, 0)?,
                    "Write" => io.add(0, n)?,
                    "Sync" | "Async" | "Discard" | "Total" => io,
                    _ => return None,
                };
            }
            _ => return None,
        }
    }
    Some(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numbers_are_digits_within_u64() {
        assert_eq!(number("0"), Some(0));
        assert_eq!(number("18446744073709551615"), Some(u64::MAX));
        assert_eq!(number("18446744073709551616"), None);
        for bad in ["", "-1", "+1", " 1", "1 ", "0x10", "1e3", "max", "١"] {
            assert_eq!(number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn single_values() {
        assert_eq!(single("43773952\n"), Some(43_773_952));
        assert_eq!(single("43773952"), Some(43_773_952));
        assert_eq!(single("1\n2\n"), None);
        assert_eq!(single("\n"), None);
        assert_eq!(single(""), None);
        assert_eq!(single("max\n"), None);
    }

    #[test]
    fn keyed_values_of_real_files() {
        let cpu = "usage_usec 2782218\nuser_usec 969580\nsystem_usec 1812638\nnr_periods 0\n";
        assert_eq!(keyed(cpu, "usage_usec"), Some(2_782_218));
        assert_eq!(keyed(cpu, "user_usec"), Some(969_580));
        assert_eq!(keyed(cpu, "nr_bursts"), None);
        let oom = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed(oom, "oom_kill"), Some(3));
        let events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(keyed(events, "oom_kill"), Some(1));
        // Twice, or with more words, is not a file the kernel wrote.
        assert_eq!(keyed("oom_kill 1\noom_kill 2\n", "oom_kill"), None);
        assert_eq!(keyed("oom_kill 1 2\n", "oom_kill"), None);
        assert_eq!(keyed("oom_kill x\n", "oom_kill"), None);
        // A key is a whole word.
        assert_eq!(keyed("oom_kill_disable 0\n", "oom_kill"), None);
    }

    #[test]
    fn io_stat_sums_devices() {
        let text = "254:0 rbytes=1048576 wbytes=2097152 rios=10 wios=20 dbytes=0 dios=0\n\
                    8:16 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0\n";
        assert_eq!(
            io_stat(text),
            Some(Io {
                read: 1_052_672,
                written: 2_097_152
            })
        );
        assert_eq!(io_stat(""), Some(Io::default()));
        assert_eq!(io_stat("254:0 rbytes=x\n"), None);
        assert_eq!(io_stat("disk rbytes=1\n"), None);
        assert_eq!(io_stat("254:0 rbytes\n"), None);
        let over = format!("1:0 rbytes={}\n1:1 rbytes=1\n", u64::MAX);
        assert_eq!(io_stat(&over), None);
    }

    #[test]
    fn blkio_sums_reads_and_writes() {
        let text = "254:0 Read 1048576\n254:0 Write 4096\n254:0 Sync 4096\n254:0 Async 1048576\n\
                    254:0 Discard 0\n254:0 Total 1052672\n8:0 Read 1\n8:0 Write 2\nTotal 1052675\n";
        assert_eq!(
            blkio(text),
            Some(Io {
                read: 1_048_577,
                written: 4098
            })
        );
        // What this kernel writes for a cgroup that did no I/O.
        assert_eq!(blkio("Total 0\n"), Some(Io::default()));
        assert_eq!(blkio("254:0 Frobnicate 1\n"), None);
        assert_eq!(blkio("254:0 Read\n"), None);
        assert_eq!(blkio("Total x\n"), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        // Whatever a file holds, parsing ends, never panics, and a figure
        // read is one the text spells out.
        #[test]
        fn no_text_breaks_a_parser(text in any::<String>()) {
            if let Some(n) = single(&text) {
                // Spaces after the number are let be (`single` trims them).
                prop_assert_eq!(
                    text.lines().next().and_then(|l| l.trim_end().parse().ok()),
                    Some(n)
                );
            }
            if let Some(n) = keyed(&text, "oom_kill") {
                let spelt = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("oom_kill "))
                    .any(|v| v.parse() == Ok(n));
                prop_assert!(spelt);
            }
            let _ = io_stat(&text);
            let _ = blkio(&text);
        }

        #[test]
        fn io_stat_lines_add_up(rows in proptest::collection::vec((0u32..300, 0u32..300, 0u64..1u64 << 40, 0u64..1u64 << 40), 0..20)) {
            let text: String = rows
                .iter()
                .map(|(ma, mi, r, w)| format!("{ma}:{mi} rbytes={r} wbytes={w} rios=1 wios=1 dbytes=0 dios=0\n"))
                .collect();
            let io = io_stat(&text).expect("well formed");
            prop_assert_eq!(io.read, rows.iter().map(|r| r.2).sum::<u64>());
            prop_assert_eq!(io.written, rows.iter().map(|r| r.3).sum::<u64>());
        }

        #[test]
        fn blkio_lines_add_up(rows in proptest::collection::vec((0u32..300, 0u64..1u64 << 40, 0u64..1u64 << 40), 0..20)) {
            let mut text = String::new();
            for (dev, r, w) in &rows {
                text.push_str(&format!("{dev}:0 Read {r}\n{dev}:0 Write {w}\n{dev}:0 Total {}\n", r + w));
            }
            text.push_str("Total 0\n");
            let io = blkio(&text).expect("well formed");
            prop_assert_eq!(io.read, rows.iter().map(|r| r.1).sum::<u64>());
            prop_assert_eq!(io.written, rows.iter().map(|r| r.2).sum::<u64>());
        }
    }
}
