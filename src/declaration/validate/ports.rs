//! Which port declared earlier binds what a port would bind, found in
//! constant time: the checks of a container's `ports` and of every
//! container's published ports are linear in the number of ports (a
//! container may publish all 131,070 ports of both protocols).
//!
//! Two ports bind the same when they have the same protocol and host port
//! and the same address, or either of them every address
//! ([`Port::binds_same`]); a port without a host port (one the runtime
//! picks) clashes only with the very same port.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::declaration::model::{Port, Protocol};

/// The ports taken so far, each with what took it first (`T`).
#[derive(Debug)]
pub(super) struct Bound<T> {
    firsts: Vec<T>,
    by_port: HashMap<(u16, Protocol), Bucket>,
    unbound: HashMap<Port, usize>,
}

/// The ports of one protocol and host port: indices into `firsts`, whose
/// order is the order they were taken in.
#[derive(Debug, Default)]
struct Bucket {
    /// The first of any address.
    any: Option<usize>,
    /// The first of every address.
    every: Option<usize>,
    /// The first of each address.
    by_address: HashMap<IpAddr, usize>,
}

impl<T> Bound<T> {
    pub(super) fn new() -> Bound<T> {
        Bound {
            firsts: Vec::new(),
            by_port: HashMap::new(),
            unbound: HashMap::new(),
        }
    }

    /// What took first what `port` would bind, if anything did.
    pub(super) fn first(&self, port: &Port) -> Option<&T> {
        let index = match port.host {
            None => self.unbound.get(port).copied(),
            Some(host) => {
                let bucket = self.by_port.get(&(host, port.protocol))?;
                match port.address {
                    None => bucket.any,
                    Some(address) => {
                        match (bucket.every, bucket.by_address.get(&address).copied()) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        }
                    }
                }
            }
        }?;
        self.firsts.get(index)
    }

    /// Take `port` for `first` (which [`Bound::first`] said nothing took).
    pub(super) fn take(&mut self, port: &Port, first: T) {
        let index = self.firsts.len();
        self.firsts.push(first);
        let Some(host) = port.host else {
            self.unbound.entry(port.clone()).or_insert(index);
            return;
        };
        let bucket = self.by_port.entry((host, port.protocol)).or_default();
        bucket.any.get_or_insert(index);
        match port.address {
            None => {
                bucket.every.get_or_insert(index);
            }
            Some(address) => {
                bucket.by_address.entry(address).or_insert(index);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(host: Option<u16>, protocol: Protocol, address: Option<&str>) -> Port {
        Port {
            host,
            container: 80,
            protocol,
            address: address.map(|a| a.parse().expect("address")),
        }
    }

    /// The index answers as a search of every earlier port would.
    #[test]
    fn finds_what_a_search_of_every_earlier_port_finds() {
        let hosts = [None, Some(80), Some(81)];
        let protocols = [Protocol::Tcp, Protocol::Udp];
        let addresses = [None, Some("127.0.0.1"), Some("10.0.0.1"), Some("::1")];
        let mut all = Vec::new();
        for h in hosts {
            for p in protocols {
                for a in addresses {
                    all.push(port(h, p, a));
                }
            }
        }
        // Every order of a few of them, as a rolling window over two passes.
        let sequence: Vec<&Port> = all.iter().chain(all.iter().rev()).collect();
        for start in 0..sequence.len() {
            let mut bound = Bound::new();
            let mut taken: Vec<(usize, &Port)> = Vec::new();
            for (i, p) in sequence.iter().cycle().skip(start).take(12).enumerate() {
                let searched = taken
                    .iter()
                    .find(|(_, q)| q.binds_same(p) || *q == *p)
                    .map(|(i, _)| *i);
                assert_eq!(bound.first(p).copied(), searched, "{p}");
                if searched.is_none() {
                    bound.take(p, i);
                    taken.push((i, p));
                }
            }
        }
    }
}
