//! The cases every front end runs against its own types: the key logic on its request
//! (`run_all`), so that the same request is the same client; the answers on its header
//! map (`run_answers`), so that the same decision is the same bytes.

mod answers;
mod keys;

pub use answers::run_answers;
pub use keys::run_all;
