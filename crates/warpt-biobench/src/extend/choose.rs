//! Where a walk goes where the graph branches: the rules of
//! [`super`]'s documentation, each a method of the extender, and the pair
//! support they weigh.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::{Extender, MAX_VISITS, Node, Walk};
use crate::threading::{Hit, Insert};

/// Pairs that must vouch for a branch.
const MIN_LINKS: usize = 4;
/// The chosen branch needs this many times the runner-up's pairs.
const DOMINANCE: usize = 4;
/// Bubble branches differ in length by at most this many bases.
const BUBBLE_INDEL: i64 = 50;
/// Unitigs a bubble's branches may take before they meet.
const BUBBLE_STEPS: usize = 3;
/// Ways through a tangle a bridge looks at, at most.
const BRIDGE_STATES: usize = 2000;
/// The walk's last unitigs a loop may lead back to.
const LOOP_NODES: usize = 8;

impl Extender<'_> {
    /// Past a tangle (a tandem repeat with diverged copies, a complex
    /// bubble): the way through the graph to the nearest single-copy
    /// unitig that pairs vouch for at that distance, the other single-copy
    /// unitigs within the insert's reach (nearly) unvouched. The unitigs
    /// on the way, that one last; `None` when no one stands out.
    fn bridge(&self, walk: &Walk) -> Option<Vec<Node>> {
        let insert = self.insert?;
        let here = self.anchors(walk);
        let reach = walk.len + insert.hi;
        // (node, walk coordinate of its first base, the state before).
        let last = walk.nodes[walk.nodes.len() - 1];
        let mut states: Vec<(Node, i64, usize)> =
            vec![(last, walk.starts[walk.starts.len() - 1], 0)];
        let mut queue: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
        queue.push(Reverse((walk.len, 0)));
        // Each single-copy unitig's best placement: (support, state).
        let mut found: Vec<(u32, usize, usize)> = Vec::new();
        while let Some(Reverse((end, at))) = queue.pop() {
            if states.len() >= BRIDGE_STATES {
                break;
            }
            for &n in self.successors(states[at].0) {
                let start = end - (self.k - 1);
                if start > reach {
                    continue;
                }
                states.push((n, start, at));
                let state = states.len() - 1;
                if self.unique[n.id as usize] {
                    let support = self.support(walk, &here, n, start, insert);
                    match found.iter_mut().find(|f| f.0 == n.id) {
                        Some(f) if f.1 >= support => {}
                        Some(f) => *f = (n.id, support, state),
                        None => found.push((n.id, support, state)),
                    }
                } else {
                    queue.push(Reverse((start + self.len(n.id), state)));
                }
            }
        }
        found.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let (best, second) = (found.first()?.1, found.get(1).map_or(0, |f| f.1));
        if best < MIN_LINKS || second * DOMINANCE > best {
            return None;
        }
        let mut path = Vec::new();
        let mut at = found[0].2;
        while at != 0 {
            path.push(states[at].0);
            at = states[at].2;
        }
        path.reverse();
        Some(path)
    }

    /// Which way to go on from the walk's end, where `options` (two or
    /// more successors) branch: the unitigs to take, if any way is clear
    /// (the rules in the module's documentation, in that order).
    pub(super) fn choose(&mut self, walk: &Walk, options: &[Node]) -> Option<Vec<Node>> {
        if let Some(n) = self.vouched(walk, options) {
            self.done.by_pairs += 1;
            return Some(vec![n]);
        }
        if let Some(path) = self.bridge(walk) {
            self.done.bridges += 1;
            return Some(path);
        }
        if let Some(n) = self.round_the_loop(walk, options) {
            self.done.by_loop += 1;
            return Some(vec![n]);
        }
        let cov = |n: &Node| self.unitigs[n.id as usize].coverage;
        let lengths = options.iter().map(|n| self.len(n.id));
        let spread = lengths.clone().max().unwrap_or(0) - lengths.min().unwrap_or(0);
        if spread <= BUBBLE_INDEL
            && self.unique[walk.nodes[walk.nodes.len() - 1].id as usize]
            && self.meet(options)
        {
            self.done.by_bubble += 1;
            return options
                .iter()
                .copied()
                .max_by(|a, b| cov(a).total_cmp(&cov(b)).then(b.id.cmp(&a.id)))
                .map(|n| vec![n]);
        }
        None
    }

    /// A tandem repeat, collapsed into a cycle: one option leads back into
    /// the walk's last few unitigs, the others out. Round the cycle as many times as
    /// its coverage says the genome holds its copies, then out (the way
    /// pairs vouch for where there are several).
    fn round_the_loop(&self, walk: &Walk, options: &[Node]) -> Option<Node> {
        let recent = &walk.nodes[walk.nodes.len().saturating_sub(LOOP_NODES)..];
        let (cycle, out): (Vec<Node>, Vec<Node>) = options.iter().partition(|&&o| {
            recent.contains(&o) || self.reach(o).iter().any(|n| recent.contains(n))
        });
        let ([round], [_, ..]) = (cycle.as_slice(), out.as_slice()) else {
            return None;
        };
        let copies = (self.unitigs[round.id as usize].coverage / self.median).round() as usize;
        let rounds = walk.nodes.iter().filter(|n| n.id == round.id).count();
        if rounds + 1 < copies.min(MAX_VISITS) {
            return Some(*round);
        }
        match out.as_slice() {
            [only] => Some(*only),
            several => self.vouched(walk, several),
        }
    }

    /// The unitigs within [`BUBBLE_STEPS`] steps after `from`.
    fn reach(&self, from: Node) -> Vec<Node> {
        let mut seen: Vec<Node> = Vec::new();
        let mut frontier = vec![from];
        for _ in 0..BUBBLE_STEPS {
            let mut next = Vec::new();
            for n in frontier {
                for &s in self.successors(n) {
                    if !seen.contains(&s) {
                        seen.push(s);
                        next.push(s);
                    }
                }
            }
            frontier = next;
        }
        seen
    }

    /// Whether every branch of `options` reaches one same unitig within
    /// [`BUBBLE_STEPS`] unitigs (a bubble, however its branches split).
    fn meet(&self, options: &[Node]) -> bool {
        let mut common = self.reach(options[0]);
        for &o in &options[1..] {
            let theirs = self.reach(o);
            common.retain(|n| theirs.contains(n) && !options.contains(n));
        }
        !common.is_empty()
    }

    /// The one of `options` pairs vouch for, if one stands out: first among
    /// the single-copy ones (a repeat beside them, a tandem repeat's loop
    /// most often, shares the pairs of whatever lies next to it), then
    /// among all but the loops back into the walk.
    fn vouched(&self, walk: &Walk, options: &[Node]) -> Option<Node> {
        let insert = self.insert?;
        let start = walk.len - (self.k - 1);
        let here = self.anchors(walk);
        let mut scored: Vec<(usize, bool, Node)> = options
            .iter()
            .map(|&n| {
                let again = walk.nodes.iter().any(|w| w.id == n.id);
                (self.support(walk, &here, n, start, insert), again, n)
            })
            .collect();
        // A way on that pairs vouch for beats going round a loop again.
        if scored.iter().any(|s| !s.1 && s.0 >= MIN_LINKS) {
            scored.retain(|s| !s.1);
        }
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.id.cmp(&b.2.id)));
        let clear = |s: &[&(usize, bool, Node)]| {
            let (best, second) = (s.first()?.0, s.get(1).map_or(0, |s| s.0));
            (best >= MIN_LINKS && second * DOMINANCE <= best).then_some(s[0].2)
        };
        let single: Vec<&(usize, bool, Node)> = scored
            .iter()
            .filter(|s| self.unique[s.2.id as usize])
            .collect();
        clear(&single).or_else(|| clear(&scored.iter().collect::<Vec<_>>()))
    }

    /// The walk's single-copy unitigs by index, where pairs anchor.
    fn anchors(&self, walk: &Walk) -> HashMap<u32, usize> {
        walk.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| self.unique[n.id as usize])
            .map(|(i, n)| (n.id, i))
            .collect()
    }

    /// Whether pairs deny that the walk, now in a repeat, leaves it into
    /// single-copy unitig `n`: a single-copy unitig of the walk lies close
    /// enough behind for pairs to reach `n`, and none does (the copy the
    /// walk is in goes on elsewhere, its own way lost to a coverage gap).
    pub(super) fn refuted(&self, walk: &Walk, n: Node) -> bool {
        let last = walk.nodes[walk.nodes.len() - 1];
        let Some(insert) = self.insert else {
            return false;
        };
        if self.unique[last.id as usize] || !self.unique[n.id as usize] {
            return false;
        }
        let close = walk.nodes.iter().zip(&walk.starts).any(|(m, s)| {
            self.unique[m.id as usize]
                && walk.len - (s + self.len(m.id)) < insert.median - 2 * self.k
        });
        close
            && self.support(
                walk,
                &self.anchors(walk),
                n,
                walk.len - (self.k - 1),
                insert,
            ) == 0
    }

    /// Pairs with a mate on `n` (placed at walk coordinate `start`) reading
    /// back towards the walk and the other on one of the walk's single-copy
    /// unitigs reading forwards, the fragment they span within the insert.
    fn support(
        &self,
        walk: &Walk,
        here: &HashMap<u32, usize>,
        n: Node,
        start: i64,
        insert: Insert,
    ) -> usize {
        let mut count = 0;
        for &m in self.threads.on(n.id) {
            let Some(h) = self
                .threads
                .hits(m)
                .iter()
                .find(|h| h.unitig == n.id && h.solid())
            else {
                continue;
            };
            let (p_there, forwards) = self.place(*h, n, start);
            if forwards {
                continue;
            }
            let vouches = self.threads.hits(m ^ 1).iter().any(|o| {
                let Some(&i) = here.get(&o.unitig).filter(|_| o.solid()) else {
                    return false;
                };
                let (p_here, forwards) = self.place(*o, walk.nodes[i], walk.starts[i]);
                let fragment = p_there - p_here + 1;
                forwards && (insert.lo..=insert.hi).contains(&fragment)
            });
            count += usize::from(vouches);
        }
        count
    }

    /// A hit's 5' base on the walk, and whether the read runs forwards
    /// there, for unitig `n` placed at walk coordinate `start`.
    fn place(&self, h: Hit, n: Node, start: i64) -> (i64, bool) {
        if n.along {
            (start + h.pos5, h.along)
        } else {
            (start + self.len(n.id) - 1 - h.pos5, !h.along)
        }
    }
}
