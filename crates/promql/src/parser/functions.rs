//! The functions PromQL knows: their argument and result types (facts of
//! Prometheus v3.16.0's function list), for the parser's type checks.

use super::ast::ValueType;

/// A PromQL function's signature.
#[derive(Debug, PartialEq, Eq)]
pub struct Function {
    pub name: &'static str,
    pub arg_types: &'static [ValueType],
    /// 0: exactly `arg_types`; n > 0: the last n may be left out; -1: the
    /// last may repeat.
    pub variadic: i32,
    pub return_type: ValueType,
    /// Behind `--enable-feature=promql-experimental-functions` in
    /// Prometheus.
    pub experimental: bool,
}

const fn f(
    name: &'static str,
    arg_types: &'static [ValueType],
    variadic: i32,
    return_type: ValueType,
    experimental: bool,
) -> Function {
    Function {
        name,
        arg_types,
        variadic,
        return_type,
        experimental,
    }
}

use ValueType as V;

/// All functions, sorted by name.
static FUNCTIONS: &[Function] = &[
    f("abs", &[V::Vector], 0, V::Vector, false),
    f("absent", &[V::Vector], 0, V::Vector, false),
    f("absent_over_time", &[V::Matrix], 0, V::Vector, false),
    f("acos", &[V::Vector], 0, V::Vector, false),
    f("acosh", &[V::Vector], 0, V::Vector, false),
    f("asin", &[V::Vector], 0, V::Vector, false),
    f("asinh", &[V::Vector], 0, V::Vector, false),
    f("atan", &[V::Vector], 0, V::Vector, false),
    f("atanh", &[V::Vector], 0, V::Vector, false),
    f("avg_over_time", &[V::Matrix], 0, V::Vector, false),
    f("ceil", &[V::Vector], 0, V::Vector, false),
    f("changes", &[V::Matrix], 0, V::Vector, false),
    f(
        "clamp",
        &[V::Vector, V::Scalar, V::Scalar],
        0,
        V::Vector,
        false,
    ),
    f("clamp_max", &[V::Vector, V::Scalar], 0, V::Vector, false),
    f("clamp_min", &[V::Vector, V::Scalar], 0, V::Vector, false),
    f("cos", &[V::Vector], 0, V::Vector, false),
    f("cosh", &[V::Vector], 0, V::Vector, false),
    f("count_over_time", &[V::Matrix], 0, V::Vector, false),
    f("day_of_month", &[V::Vector], 1, V::Vector, false),
    f("day_of_week", &[V::Vector], 1, V::Vector, false),
    f("day_of_year", &[V::Vector], 1, V::Vector, false),
    f("days_in_month", &[V::Vector], 1, V::Vector, false),
    f("deg", &[V::Vector], 0, V::Vector, false),
    f("delta", &[V::Matrix], 0, V::Vector, false),
    f("deriv", &[V::Matrix], 0, V::Vector, false),
    f(
        "double_exponential_smoothing",
        &[V::Matrix, V::Scalar, V::Scalar],
        0,
        V::Vector,
        true,
    ),
    f("end", &[], 0, V::Scalar, true),
    f("exp", &[V::Vector], 0, V::Vector, false),
    f("first_over_time", &[V::Matrix], 0, V::Vector, false),
    f("floor", &[V::Vector], 0, V::Vector, false),
    f("histogram_avg", &[V::Vector], 0, V::Vector, false),
    f("histogram_count", &[V::Vector], 0, V::Vector, false),
    f(
        "histogram_fraction",
        &[V::Scalar, V::Scalar, V::Vector],
        0,
        V::Vector,
        false,
    ),
    f(
        "histogram_quantile",
        &[V::Scalar, V::Vector],
        0,
        V::Vector,
        false,
    ),
    f(
        "histogram_quantiles",
        &[V::Vector, V::String, V::Scalar, V::Scalar],
        9,
        V::Vector,
        true,
    ),
    f("histogram_stddev", &[V::Vector], 0, V::Vector, false),
    f("histogram_stdvar", &[V::Vector], 0, V::Vector, false),
    f("histogram_sum", &[V::Vector], 0, V::Vector, false),
    f("hour", &[V::Vector], 1, V::Vector, false),
    f("idelta", &[V::Matrix], 0, V::Vector, false),
    f("increase", &[V::Matrix], 0, V::Vector, false),
    f("info", &[V::Vector, V::Vector], 1, V::Vector, true),
    f("integral", &[V::Matrix, V::Scalar], 1, V::Vector, true),
    f("irate", &[V::Matrix], 0, V::Vector, false),
    f(
        "label_join",
        &[V::Vector, V::String, V::String, V::String],
        -1,
        V::Vector,
        false,
    ),
    f(
        "label_replace",
        &[V::Vector, V::String, V::String, V::String, V::String],
        0,
        V::Vector,
        false,
    ),
    f("last_over_time", &[V::Matrix], 0, V::Vector, false),
    f("ln", &[V::Vector], 0, V::Vector, false),
    f("log10", &[V::Vector], 0, V::Vector, false),
    f("log2", &[V::Vector], 0, V::Vector, false),
    f("mad_over_time", &[V::Matrix], 0, V::Vector, true),
    f("max_of", &[V::Scalar, V::Scalar], 0, V::Scalar, true),
    f("max_over_time", &[V::Matrix], 0, V::Vector, false),
    f("min_of", &[V::Scalar, V::Scalar], 0, V::Scalar, true),
    f("min_over_time", &[V::Matrix], 0, V::Vector, false),
    f("minute", &[V::Vector], 1, V::Vector, false),
    f("month", &[V::Vector], 1, V::Vector, false),
    f("pi", &[], 0, V::Scalar, false),
    f(
        "predict_linear",
        &[V::Matrix, V::Scalar],
        0,
        V::Vector,
        false,
    ),
    f("present_over_time", &[V::Matrix], 0, V::Vector, false),
    f(
        "quantile_over_time",
        &[V::Scalar, V::Matrix],
        0,
        V::Vector,
        false,
    ),
    f("rad", &[V::Vector], 0, V::Vector, false),
    f("range", &[], 0, V::Scalar, true),
    f("rate", &[V::Matrix], 0, V::Vector, false),
    f("resets", &[V::Matrix], 0, V::Vector, false),
    f("round", &[V::Vector, V::Scalar], 1, V::Vector, false),
    f("scalar", &[V::Vector], 0, V::Scalar, false),
    f("sgn", &[V::Vector], 0, V::Vector, false),
    f("sin", &[V::Vector], 0, V::Vector, false),
    f("sinh", &[V::Vector], 0, V::Vector, false),
    f("sort", &[V::Vector], 0, V::Vector, false),
    f(
        "sort_by_label",
        &[V::Vector, V::String],
        -1,
        V::Vector,
        true,
    ),
    f(
        "sort_by_label_desc",
        &[V::Vector, V::String],
        -1,
        V::Vector,
        true,
    ),
    f("sort_desc", &[V::Vector], 0, V::Vector, false),
    f("sqrt", &[V::Vector], 0, V::Vector, false),
    f("start", &[], 0, V::Scalar, true),
    f("start_timestamp", &[V::Vector], 0, V::Vector, true),
    f("stddev_over_time", &[V::Matrix], 0, V::Vector, false),
    f("stdvar_over_time", &[V::Matrix], 0, V::Vector, false),
    f("step", &[], 0, V::Scalar, true),
    f("sum_over_time", &[V::Matrix], 0, V::Vector, false),
    f("tan", &[V::Vector], 0, V::Vector, false),
    f("tanh", &[V::Vector], 0, V::Vector, false),
    f("time", &[], 0, V::Scalar, false),
    f("timestamp", &[V::Vector], 0, V::Vector, false),
    f("ts_of_first_over_time", &[V::Matrix], 0, V::Vector, true),
    f("ts_of_last_over_time", &[V::Matrix], 0, V::Vector, true),
    f("ts_of_max_over_time", &[V::Matrix], 0, V::Vector, true),
    f("ts_of_min_over_time", &[V::Matrix], 0, V::Vector, true),
    f("vector", &[V::Scalar], 0, V::Vector, false),
    f("year", &[V::Vector], 1, V::Vector, false),
];

/// The function of a name.
pub fn function(name: &str) -> Option<&'static Function> {
    FUNCTIONS
        .binary_search_by(|f| f.name.cmp(name))
        .ok()
        .map(|i| &FUNCTIONS[i])
}

/// Whether a function of this name is behind Prometheus' experimental
/// functions flag.
pub fn is_experimental(name: &str) -> bool {
    function(name).is_some_and(|f| f.experimental)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_found() {
        assert!(FUNCTIONS.windows(2).all(|w| w[0].name < w[1].name));
        assert_eq!(
            function("rate").map(|f| f.arg_types),
            Some(&[V::Matrix][..])
        );
        assert!(function("nope").is_none());
        assert!(is_experimental("integral") && !is_experimental("rate"));
    }
}
