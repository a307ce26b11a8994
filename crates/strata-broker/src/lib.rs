//! `strata-broker`: the Kafka protocol server.
