//! A metric family as one scrape sees it ([`Family`]: name, help, kind and
//! labelled samples) and the prometheus-client [`Collector`] that writes a
//! list of them. Every module of `metrics` turns its live counters or the
//! broker's state into families; `render` encodes them in one pass.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// Label pairs of one sample, in output order.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// One sample's value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// A monotonic count (the encoder adds `_total` to the family name).
    Counter(u64),
    /// A monotonic amount that is not whole (CPU seconds).
    CounterFloat(f64),
    /// An integer gauge (offsets, sizes, counts), written exactly.
    Int(i64),
    /// A fractional gauge (percentages, seconds).
    Float(f64),
    /// A classic histogram: `buckets` are `(upper bound, count in that
    /// bucket alone)`, the last bound `+Inf`.
    Histogram {
        sum: f64,
        count: u64,
        buckets: Vec<(f64, u64)>,
    },
}

/// One labelled value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    pub labels: Labels,
    pub value: Value,
}

/// The kind of a family, as the `# TYPE` line says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// All samples of one metric name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Family {
    /// The name without the `_total` suffix the encoder adds to counters.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

impl Family {
    pub(crate) fn new(name: &'static str, help: &'static str, kind: Kind) -> Family {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    /// Add a sample.
    pub(crate) fn push(&mut self, labels: Labels, value: Value) {
        self.samples.push(Sample { labels, value });
    }
}

/// The families of one scrape, as a prometheus-client collector.
#[derive(Debug)]
pub(crate) struct Families(pub Vec<Family>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for family in &self.0 {
            // An empty family would print a TYPE line and no sample.
            if family.samples.is_empty() {
                continue;
            }
            let kind = match family.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
                Kind::Histogram => MetricType::Histogram,
            };
            let mut metric = encoder.encode_descriptor(family.name, family.help, None, kind)?;
            for sample in &family.samples {
                let mut e = metric.encode_family(&sample.labels)?;
                match &sample.value {
                    Value::Counter(v) => ConstCounter::new(*v).encode(e)?,
                    Value::CounterFloat(v) => ConstCounter::new(*v).encode(e)?,
                    Value::Int(v) => ConstGauge::new(*v).encode(e)?,
                    Value::Float(v) => ConstGauge::new(*v).encode(e)?,
                    Value::Histogram {
                        sum,
                        count,
                        buckets,
                    } => e.encode_histogram::<NoLabelSet>(*sum, *count, buckets, None)?,
                }
            }
        }
        Ok(())
    }
}
