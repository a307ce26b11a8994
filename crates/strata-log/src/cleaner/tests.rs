//! Unit tests of the cleaner's pure parts: the filter over hand-built
//! batches and the policy functions.
