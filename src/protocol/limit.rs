//! The per-member limit on one reply's assignments: a master that writes
//! thousands of `ASSIGN` lines for one member (a junk plan, a loop in its
//! output) must not start thousands of threads and model calls. The first
//! `limit` assignments of each member are kept, in order; the rest are
//! dropped and said back to the master.

use std::collections::HashMap;

use super::{Assignment, ProtocolError};

/// Assignments one member may get in one round when `team.yaml` sets no
/// `max_assignments_per_member`.
pub const DEFAULT_MAX_ASSIGNMENTS_PER_MEMBER: usize = 8;

/// Keeps the first `limit` assignments of each member (at least one),
/// in their order, and drops the rest: one
/// [`ProtocolError::TooManyAssignments`] for each member that had more, in
/// the order the members first go over the limit.
pub(crate) fn limit_per_member(
    assignments: &mut Vec<Assignment>,
    limit: usize,
) -> Vec<ProtocolError> {
    let limit = limit.max(1);
    // member -> its assignments so far
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut errors: Vec<ProtocolError> = Vec::new();
    assignments.retain(|a| {
        let n = seen.entry(a.member.clone()).or_insert(0);
        *n += 1;
        if *n <= limit {
            return true;
        }
        match errors.iter_mut().find(|e| {
            matches!(e, ProtocolError::TooManyAssignments { member, .. } if *member == a.member)
        }) {
            Some(ProtocolError::TooManyAssignments { given, .. }) => *given += 1,
            _ => errors.push(ProtocolError::TooManyAssignments {
                member: a.member.clone(),
                given: *n,
                limit,
            }),
        }
        false
    });
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(member: &str, task: &str) -> Assignment {
        Assignment {
            member: member.into(),
            task: task.into(),
        }
    }

    #[test]
    fn the_first_assignments_of_each_member_are_kept_and_the_rest_said() {
        let mut v: Vec<Assignment> = (0..50).map(|i| to("writer", &format!("t{i}"))).collect();
        v.insert(3, to("editor", "check"));
        v.push(to("editor", "check again"));
        let errors = limit_per_member(&mut v, 8);
        assert_eq!(v.len(), 10);
        assert_eq!(v.iter().filter(|a| a.member == "writer").count(), 8);
        assert_eq!(v[0].task, "t0");
        assert_eq!(v[3].member, "editor");
        assert_eq!(v.last().unwrap().task, "check again");
        assert_eq!(
            errors,
            vec![ProtocolError::TooManyAssignments {
                member: "writer".into(),
                given: 50,
                limit: 8
            }]
        );
        assert_eq!(
            errors[0].to_string(),
            "50 assignments to 'writer' in one reply: the first 8 are kept, the other 42 \
             dropped (at most 8 per member a round: max_assignments_per_member in team.yaml)"
        );
        let mut few = vec![to("a", "x"), to("b", "y")];
        assert!(limit_per_member(&mut few, 1).is_empty());
        assert_eq!(few.len(), 2);
    }
}
