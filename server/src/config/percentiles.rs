//! `latency-tracking-info-percentiles`: its parsing and the form CONFIG GET and INFO print.

/// Formats a percentile as Redis does (`%f`, then trailing zeros and dot cut): 50, 99.9.
pub fn fmt_percentile(p: f64) -> String {
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0');
    s.trim_end_matches('.').to_string()
}

/// `latency-tracking-info-percentiles`: space-separated numbers in [0, 100]; "" is none.
pub fn parse_percentiles(v: &str) -> Result<Vec<f64>, String> {
    v.split_whitespace()
        .map(|w| {
            let p: f64 = w
                .parse()
                .ok()
                .filter(|p: &f64| !p.is_nan())
                .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            if !(0.0..=100.0).contains(&p) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                );
            }
            Ok(p)
        })
        .collect::<Result<Vec<f64>, &str>>()
        .map_err(|e| e.to_string())
}

/// The config value as CONFIG GET prints it.
pub fn normalize_percentiles(v: &str) -> Result<String, String> {
    Ok(parse_percentiles(v)?
        .iter()
        .map(|p| fmt_percentile(*p))
        .collect::<Vec<_>>()
        .join(" "))
}
