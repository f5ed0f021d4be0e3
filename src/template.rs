//! Templates and variables: `{{ var }}` and `{% if %}` in souls, tasks and
//! handoff conditions, a team's declared variables, and the `--var
//! name=value` flags that set them.

pub use crate::team::{
    TemplateError, VarError, Variables, apply_var_flags, check_template, parse_var_flag, render,
    render_task,
};
