//! The run's token budget: `--max-tokens` / `token_budget` in `team.yaml` /
//! [`Runtime::token_budget`](super::Runtime::token_budget). Checked before
//! every call; calls already in flight finish, so a run may end a little
//! over its budget. A spent budget ends the run gracefully with the best
//! answer so far (status `budget_exhausted`).

use crate::model::ModelError;

use super::run::Run;

impl Run<'_> {
    /// The effective budget in tokens, if any.
    pub(crate) fn token_budget(&self) -> Option<u64> {
        self.rt.token_budget.or(self.team.config().token_budget)
    }

    /// Fails when the budget is spent.
    pub(crate) fn budget_check(&self) -> Result<(), ModelError> {
        match self.token_budget() {
            Some(budget) => {
                let used = self.usage.lock().0.total();
                if used >= budget {
                    Err(ModelError::BudgetExhausted { used, budget })
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        }
    }

    /// Whether the budget is spent.
    pub(crate) fn budget_spent(&self) -> bool {
        self.budget_check().is_err()
    }
}
