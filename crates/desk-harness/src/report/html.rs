//! What every page of the report shares: HTML escaping and the one style sheet.

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(super) const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;background:#fafafa}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-top:2px solid #ccc;padding-top:12px}\
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;\
font-size:13px;text-align:left;vertical-align:top}th{background:#eee}\
.pair{display:flex;gap:16px;flex-wrap:wrap}.pair figure{margin:0;background:#fff;\
border:1px solid #ccc;padding:6px}.pair img{width:400px;max-width:100%;display:block}\
figcaption{font-size:12px;color:#555}.thumb{width:192px;border:1px solid #999}\
.good{color:#0a0;font-weight:bold}.bad{color:#c00;font-weight:bold}\
ol{margin:0;padding-left:20px;font-size:12px}details{margin:8px 0}code{font-size:12px}\
.shot{width:420px;display:block;border:1px solid #999}pre{font-size:11px;max-width:420px;\
white-space:pre-wrap;margin:0}.items li{margin-bottom:3px}small{color:#555}";
