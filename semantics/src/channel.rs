//! MPI's non-overtaking rule, once: the `k`-th send on a channel meets the
//! `k`-th receive on it.
//!
//! A channel is everything MPI orders messages by: the communicator, the
//! sender, the receiver and the tag. Within one channel messages cannot
//! overtake each other, so matching needs no clock: sends are numbered as
//! they are posted, receives as they are posted, and equal numbers meet.
//! The consistency check, the analysis' matching and the simulator all
//! match through [`Stream`] (and [`Channels`], a map of them); replay's
//! gates name messages by the same numbers.
//!
//! A stream usually has one reader, and a send is dropped once read. The
//! simulator's class mode lets several readers read one stream, each at its
//! own position (every member of a position class receives what its
//! representative's neighbour sent): then sends are kept.

use std::collections::VecDeque;
use std::hash::Hash;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// The channel of a message between world ranks: communicator instance
/// (see [`crate::comms`]), sender, receiver, tag. The key of the check's
/// and the analysis' channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Channel {
    /// The sender's world rank.
    pub from: u32,
    /// The receiver's world rank.
    pub to: u32,
    /// The tag.
    pub tag: i32,
    /// The communicator's instance: the same on every member, different
    /// for every other communicator.
    pub comm: u64,
}

/// One channel's sends and the receives waiting for them.
///
/// Sends are numbered from 0 in the order they are posted; each reader
/// takes them in order. A receive posted before its send waits in the
/// stream until the send comes.
#[derive(Debug)]
pub struct Stream<S, R> {
    /// Sends from number `base` on (the earlier ones were dropped).
    sends: VecDeque<S>,
    base: u64,
    /// Each reader's next number.
    next: SmallVec<[(u32, u64); 1]>,
    /// Receives posted before their send: (reader, number, receive).
    waiting: Vec<(u32, u64, R)>,
    /// Whether sends stay after being read (several readers).
    keep: bool,
}

/// The receives a send met as it was posted: reader, send, receive.
pub type MetBy<S, R> = SmallVec<[(u32, S, R); 1]>;

/// What is left on a stream when it closes: the sends no reader took and
/// the receives still waiting, each with its number, in order.
#[derive(Debug)]
pub struct Leftovers<S, R> {
    /// Sends no reader took: (number, send).
    pub sends: Vec<(u64, S)>,
    /// Receives no send met: (the number they wait for, receive).
    pub recvs: Vec<(u64, R)>,
}

/// What became of a receive posted on a stream.
#[derive(Debug)]
pub enum Read<S, R> {
    /// Its send was there: the send's number, the send.
    Now(u64, S, R),
    /// It waits for send number `k`.
    Waits(u64),
}

impl<S, R> Default for Stream<S, R> {
    fn default() -> Self {
        Stream::new(false)
    }
}

impl<S, R> Stream<S, R> {
    /// An empty stream; `keep` when several readers read it.
    pub fn new(keep: bool) -> Self {
        Stream {
            sends: VecDeque::new(),
            base: 0,
            next: SmallVec::new(),
            waiting: Vec::new(),
            keep,
        }
    }
}

impl<S: Clone, R> Stream<S, R> {
    /// The number the next send will get.
    pub fn sent(&self) -> u64 {
        self.base + self.sends.len() as u64
    }

    /// Posts a send: returns its number and the waiting receives it meets
    /// (with their readers).
    pub fn send(&mut self, s: S) -> (u64, MetBy<S, R>) {
        self.send_with(s, |s| s.clone())
    }

    /// [`Stream::send`] where a reader of a stream that keeps its sends
    /// gets `claim(send)`: the first reader may take what only one may
    /// have (the simulator's sender completion).
    pub fn send_with(&mut self, s: S, mut claim: impl FnMut(&mut S) -> S) -> (u64, MetBy<S, R>) {
        let k = self.sent();
        self.sends.push_back(s);
        let mut met = SmallVec::new();
        let mut i = 0;
        while i < self.waiting.len() {
            if self.waiting[i].1 == k {
                let (reader, _, r) = self.waiting.swap_remove(i);
                if let Some(s) = self.take(k, &mut claim) {
                    met.push((reader, s, r));
                }
            } else {
                i += 1;
            }
        }
        (k, met)
    }

    /// Posts a receive by `reader`: it takes the reader's next send, now
    /// or when it comes.
    pub fn recv(&mut self, reader: u32, r: R) -> Read<S, R> {
        self.recv_with(reader, r, |s| s.clone())
    }

    /// [`Stream::recv`] with the claim of [`Stream::send_with`].
    pub fn recv_with(
        &mut self,
        reader: u32,
        r: R,
        mut claim: impl FnMut(&mut S) -> S,
    ) -> Read<S, R> {
        let k = self.cursor(reader, true);
        match self.take(k, &mut claim) {
            Some(s) => Read::Now(k, s, r),
            None => {
                self.waiting.push((reader, k, r));
                Read::Waits(k)
            }
        }
    }

    /// Takes `reader`'s next send now, if it was posted (a matched probe,
    /// which removes the message it found), with the claim of
    /// [`Stream::send_with`].
    pub fn take_next_with(&mut self, reader: u32, mut claim: impl FnMut(&mut S) -> S) -> Option<S> {
        // Taken or not, a probe found it: the reader's next receive is
        // the one after (the cursor moves before the send is dropped).
        let k = self.cursor(reader, false);
        self.get(k)?;
        self.cursor(reader, true);
        self.take(k, &mut claim)
    }

    /// The send `reader` would take next, if it was posted (a probe).
    pub fn peek(&mut self, reader: u32) -> Option<&S> {
        let k = self.cursor(reader, false);
        self.get(k)
    }

    /// Reader `reader`'s next number; advanced when `advance`.
    pub fn cursor(&mut self, reader: u32, advance: bool) -> u64 {
        let base = self.base;
        let i = match self.next.iter().position(|x| x.0 == reader) {
            Some(i) => i,
            None => {
                self.next.push((reader, base));
                self.next.len() - 1
            }
        };
        let k = self.next[i].1.max(base);
        self.next[i].1 = if advance { k + 1 } else { k };
        k
    }

    /// Send number `k`, if it is still held.
    pub fn get(&self, k: u64) -> Option<&S> {
        self.sends
            .get(usize::try_from(k.checked_sub(self.base)?).ok()?)
    }

    /// Send number `k`, to change what later readers get of it.
    pub fn get_mut(&mut self, k: u64) -> Option<&mut S> {
        self.sends
            .get_mut(usize::try_from(k.checked_sub(self.base)?).ok()?)
    }

    /// Takes send number `k` for one reader: dropped from the stream
    /// unless it keeps its sends.
    fn take(&mut self, k: u64, claim: &mut impl FnMut(&mut S) -> S) -> Option<S> {
        let i = usize::try_from(k.checked_sub(self.base)?).ok()?;
        if self.keep || i > 0 {
            return self.sends.get_mut(i).map(claim);
        }
        let s = self.sends.pop_front()?;
        self.base += 1;
        Some(s)
    }

    /// What is left when the stream closes.
    pub fn into_leftovers(self) -> Leftovers<S, R> {
        let base = self.base;
        let sends = if self.keep {
            Vec::new()
        } else {
            self.sends
                .into_iter()
                .enumerate()
                .map(|(i, s)| (base + i as u64, s))
                .collect()
        };
        let mut waiting: Vec<(u64, R)> = self.waiting.into_iter().map(|(_, k, r)| (k, r)).collect();
        waiting.sort_by_key(|w| w.0);
        Leftovers {
            sends,
            recvs: waiting,
        }
    }

    /// Sends no reader took (one reader per stream).
    pub fn unread(&self) -> usize {
        if self.keep { 0 } else { self.sends.len() }
    }
}

/// One side's numbering of its messages per channel: the `k`-th send (or
/// receive) a rank posts on a channel gets number `k`, from 0. Both sides
/// number alike, so by non-overtaking a sender and its receiver name the
/// same message without ever meeting: replay's gates name the messages
/// they hold back this way, each rank from its own events.
#[derive(Debug)]
pub struct Numbering<K> {
    next: FxHashMap<K, u64>,
}

impl<K> Default for Numbering<K> {
    fn default() -> Self {
        Numbering {
            next: FxHashMap::default(),
        }
    }
}

impl<K: Hash + Eq> Numbering<K> {
    /// The number of the next message on `key`, which it takes.
    pub fn take(&mut self, key: K) -> u64 {
        let n = self.next.entry(key).or_insert(0);
        *n += 1;
        *n - 1
    }

    /// The number the next message on `key` will get.
    pub fn peek(&self, key: &K) -> u64 {
        self.next.get(key).copied().unwrap_or(0)
    }
}

/// Streams by channel, one reader each (the receiver): the matching of
/// whole traces by the check and the analysis.
#[derive(Debug)]
pub struct Channels<K, S, R> {
    streams: FxHashMap<K, Stream<S, R>>,
}

impl<K, S, R> Default for Channels<K, S, R> {
    fn default() -> Self {
        Channels {
            streams: FxHashMap::default(),
        }
    }
}

/// A send and the receive it met, with its number on the channel (from 0).
pub type Met<S, R> = (u64, S, R);

impl<K: Hash + Eq + Copy, S: Clone, R> Channels<K, S, R> {
    /// Posts a send on `key`: its number, and the receive it met if one
    /// was waiting.
    pub fn send(&mut self, key: K, s: S) -> (u64, Option<Met<S, R>>) {
        let (k, mut met) = self.streams.entry(key).or_default().send(s);
        (k, met.pop().map(|(_, s, r)| (k, s, r)))
    }

    /// Posts a receive on `key`: the send it met, or the number it waits
    /// for.
    pub fn recv(&mut self, key: K, r: R) -> Read<S, R> {
        self.streams.entry(key).or_default().recv(0, r)
    }

    /// Closes channel `key`: its sends no receive took and its receives
    /// no send met, with their numbers.
    pub fn close(&mut self, key: K) -> Option<Leftovers<S, R>> {
        self.streams.remove(&key).map(Stream::into_leftovers)
    }

    /// The channels open now.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.streams.keys()
    }

    /// Sends no receive took, over all open channels.
    pub fn unread(&self) -> usize {
        self.streams.values().map(Stream::unread).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kth_send_meets_the_kth_receive_whichever_comes_first() {
        let mut s: Stream<&str, &str> = Stream::default();
        assert!(matches!(s.recv(0, "r0"), Read::Waits(0)));
        let (k, met) = s.send("s0");
        assert_eq!(k, 0);
        assert_eq!(met.as_slice(), &[(0, "s0", "r0")]);
        s.send("s1");
        s.send("s2");
        assert!(matches!(s.recv(0, "r1"), Read::Now(1, "s1", "r1")));
        let left = s.into_leftovers();
        assert_eq!(left.sends, vec![(2, "s2")]);
        assert!(left.recvs.is_empty());
    }

    #[test]
    fn several_readers_each_read_every_send_in_order() {
        let mut s: Stream<u32, u32> = Stream::new(true);
        s.send(10);
        assert!(matches!(s.recv(1, 0), Read::Now(0, 10, 0)));
        assert!(matches!(s.recv(2, 0), Read::Now(0, 10, 0)));
        assert!(matches!(s.recv(2, 1), Read::Waits(1)));
        assert_eq!(s.peek(1), None);
        let (_, met) = s.send(11);
        assert_eq!(met.as_slice(), &[(2, 11, 1)]);
        assert_eq!(s.peek(1), Some(&11));
    }

    #[test]
    fn a_matched_probe_takes_the_next_send_and_the_next_receive_the_one_after() {
        let mut s: Stream<u32, u32> = Stream::default();
        assert_eq!(s.take_next_with(0, |x| *x), None);
        s.send(10);
        s.send(11);
        assert_eq!(s.take_next_with(0, |x| *x), Some(10));
        assert!(matches!(s.recv(0, 1), Read::Now(1, 11, 1)));
        assert!(matches!(s.recv(0, 2), Read::Waits(2)));
    }

    #[test]
    fn each_channel_numbers_its_messages_from_zero() {
        let mut n: Numbering<(u32, i32)> = Numbering::default();
        assert_eq!(n.peek(&(0, 1)), 0);
        assert_eq!(n.take((0, 1)), 0);
        assert_eq!(n.take((0, 2)), 0);
        assert_eq!(n.take((0, 1)), 1);
        assert_eq!(n.peek(&(0, 1)), 2);
    }

    #[test]
    fn channels_keep_their_streams_apart() {
        let mut c: Channels<(u32, u32), u32, u32> = Channels::default();
        c.send((0, 1), 1);
        c.send((0, 2), 2);
        assert!(matches!(c.recv((0, 2), 7), Read::Now(0, 2, 7)));
        assert_eq!(c.unread(), 1);
        assert!(matches!(c.recv((0, 3), 8), Read::Waits(0)));
        assert_eq!(c.close((0, 3)).unwrap().recvs, vec![(0, 8)]);
        let left = c.close((0, 1)).unwrap();
        assert_eq!(left.sends, vec![(0, 1)]);
    }
}
