//! Tests of the cleaner's choice and grouping (§11.2, §11.5).
