//! The connections one worker of the embedded server holds, each under a
//! token for its epoll set: a slot and the slot's generation, so an event
//! for a connection closed earlier in the same batch never reaches the one
//! that took its slot.

use std::time::Instant;

use super::connection::Connection;

/// A worker's connections, each under a token that names its slot and the
/// slot's generation (so an event for a connection closed earlier in the
/// same batch never reaches the one that took its slot).
#[derive(Default)]
pub(super) struct Connections {
    slots: Vec<(u32, Option<Connection>)>,
    free: Vec<usize>,
    /// How many connections it holds.
    pub held: usize,
}

impl Connections {
    pub fn insert(&mut self, connection: Connection) -> u64 {
        let index = self.free.pop().unwrap_or_else(|| {
            self.slots.push((0, None));
            self.slots.len() - 1
        });
        let slot = &mut self.slots[index];
        slot.0 = slot.0.wrapping_add(1);
        slot.1 = Some(connection);
        self.held += 1;
        (u64::from(slot.0) << 32) | index as u64
    }

    pub fn get(&mut self, token: u64) -> Option<&mut Connection> {
        let (generation, index) = ((token >> 32) as u32, (token & 0xffff_ffff) as usize);
        match self.slots.get_mut(index) {
            Some((current, Some(connection))) if *current == generation => Some(connection),
            _ => None,
        }
    }

    pub fn remove(&mut self, token: u64) -> Option<Connection> {
        let index = (token & 0xffff_ffff) as usize;
        let taken = self.slots.get_mut(index)?.1.take()?;
        self.free.push(index);
        self.held -= 1;
        Some(taken)
    }

    /// The tokens of the connections whose deadline has passed.
    pub fn expired(&self, now: Instant) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(index, (generation, slot))| {
                slot.as_ref()
                    .filter(|c| c.deadline <= now)
                    .map(|_| (u64::from(*generation) << 32) | index as u64)
            })
            .collect()
    }

    /// Every connection held.
    pub fn each_mut(&mut self) -> impl Iterator<Item = &mut Connection> {
        self.slots.iter_mut().filter_map(|(_, slot)| slot.as_mut())
    }

    pub fn tokens(&self) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, (_, slot))| slot.is_some())
            .map(|(index, (generation, _))| (u64::from(*generation) << 32) | index as u64)
            .collect()
    }
}
