//! Topic-config validation for tiered storage (Kafka `LogConfig.validate`
//! → `validateTopicLogConfigValues` / `validateRemoteStorageOnly...`,
//! reference §6.1). The broker maps every error to INVALID_CONFIG with
//! the message below, as Kafka's admin clients see it.

use strata_log::LogConfig;

/// Why a topic config is rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopicConfigError {
    #[error(
        "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
    )]
    SystemDisabled,
    #[error("Remote log storage is unsupported for the compacted topics")]
    Compacted,
    #[error(
        "The value {local} for the config local.retention.bytes should be less than or equal to the value {total} for the config retention.bytes"
    )]
    LocalBytesAboveTotal { local: i64, total: i64 },
    #[error(
        "The value {local} for the config local.retention.ms should be less than or equal to the value {total} for the config retention.ms"
    )]
    LocalMsAboveTotal { local: i64, total: i64 },
    #[error(
        "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set to the identical value because there will be no more logs copied to the remote storage."
    )]
    CopyDisabledMsMismatch,
    #[error(
        "When `remote.log.copy.disable` is set to true, the `local.retention.bytes` and `retention.bytes` must be set to the identical value because there will be no more logs copied to the remote storage."
    )]
    CopyDisabledBytesMismatch,
    #[error(
        "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`."
    )]
    DisableWithoutDelete,
}

/// Validate `new` (the effective config after the change); `old` is the
/// topic's config before an alter (`None` on create).
///
/// # Errors
/// The first rule `new` breaks.
pub fn validate_topic_config(
    system_enabled: bool,
    new: &LogConfig,
    old: Option<&LogConfig>,
) -> Result<(), TopicConfigError> {
    if old.is_some_and(|o| o.remote_storage_enable)
        && !new.remote_storage_enable
        && !new.remote_log_delete_on_disable
    {
        return Err(TopicConfigError::DisableWithoutDelete);
    }
    if !new.remote_storage_enable {
        return Ok(());
    }
    if !system_enabled {
        return Err(TopicConfigError::SystemDisabled);
    }
    if new.cleanup_policy.compact {
        return Err(TopicConfigError::Compacted);
    }
    let (total_b, local_b) = (new.retention_bytes, new.local_retention_bytes);
    if total_b > -1 && local_b != -2 && (local_b == -1 || local_b > total_b) {
        return Err(TopicConfigError::LocalBytesAboveTotal {
            local: local_b,
            total: total_b,
        });
    }
    let (total_ms, local_ms) = (new.retention_ms, new.local_retention_ms);
    if total_ms != -1 && local_ms != -2 && (local_ms == -1 || local_ms > total_ms) {
        return Err(TopicConfigError::LocalMsAboveTotal {
            local: local_ms,
            total: total_ms,
        });
    }
    if new.remote_log_copy_disable {
        if local_ms != -2 && local_ms != total_ms {
            return Err(TopicConfigError::CopyDisabledMsMismatch);
        }
        if local_b != -2 && local_b != total_b {
            return Err(TopicConfigError::CopyDisabledBytesMismatch);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiered(f: impl FnOnce(&mut LogConfig)) -> LogConfig {
        let mut c = LogConfig {
            remote_storage_enable: true,
            ..LogConfig::default()
        };
        f(&mut c);
        c
    }

    #[test]
    fn kafka_rules() {
        use TopicConfigError::*;
        let ok = |c: &LogConfig| validate_topic_config(true, c, None);
        assert_eq!(ok(&tiered(|_| {})), Ok(()));
        assert_eq!(
            validate_topic_config(false, &tiered(|_| {}), None),
            Err(SystemDisabled)
        );
        assert_eq!(
            validate_topic_config(false, &LogConfig::default(), None),
            Ok(())
        );
        assert_eq!(
            ok(&tiered(|c| c.cleanup_policy.compact = true)),
            Err(Compacted)
        );
        assert_eq!(
            ok(&tiered(|c| {
                c.retention_bytes = 100;
                c.local_retention_bytes = 101;
            })),
            Err(LocalBytesAboveTotal {
                local: 101,
                total: 100
            })
        );
        assert_eq!(
            ok(&tiered(|c| {
                c.retention_bytes = 100;
                c.local_retention_bytes = -1;
            })),
            Err(LocalBytesAboveTotal {
                local: -1,
                total: 100
            })
        );
        assert_eq!(
            ok(&tiered(|c| c.local_retention_bytes = 5)),
            Ok(()),
            "unlimited total"
        );
        assert_eq!(
            ok(&tiered(|c| c.local_retention_ms = c.retention_ms + 1)),
            Err(LocalMsAboveTotal {
                local: 604_800_001,
                total: 604_800_000
            })
        );
        assert_eq!(ok(&tiered(|c| c.local_retention_ms = 1000)), Ok(()));
        assert_eq!(
            ok(&tiered(|c| {
                c.remote_log_copy_disable = true;
                c.local_retention_ms = 1000;
            })),
            Err(CopyDisabledMsMismatch)
        );
        let was = tiered(|_| {});
        assert_eq!(
            validate_topic_config(true, &LogConfig::default(), Some(&was)),
            Err(DisableWithoutDelete)
        );
        let off = LogConfig {
            remote_log_delete_on_disable: true,
            ..LogConfig::default()
        };
        assert_eq!(validate_topic_config(true, &off, Some(&was)), Ok(()));
    }
}
