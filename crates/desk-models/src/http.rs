//! The HTTP transport of every adapter: one JSON POST per model call, with bounded retries.
//!
//! Retry policy (the only place it lives): a call is retried only when it failed with no effect
//! on the vendor's side: a connect error, a timeout before any response arrived, or HTTP
//! 429/500/502/503/529. Anything else, including a timeout while reading a body that had started
//! to arrive, fails at once. Delays double from `retry_base_delay`, capped at 30 s; a
//! `retry-after` header (seconds) is honored up to the same cap. Actions are never retried here:
//! this module only ever re-sends a model request.
//!
//! The API key goes into exactly one sensitive header and into nothing else: not the URL, not a
//! log line, not an error (vendor messages are scrubbed of it as well).

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::config::{ApiKey, ModelConfig, ModelError};

const MAX_DELAY: Duration = Duration::from_secs(30);
const MAX_ERROR_CHARS: usize = 600;

/// How the key is sent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AuthStyle {
    /// `authorization: Bearer KEY`.
    Bearer,
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
}

/// A JSON-over-HTTP client for one model endpoint.
#[derive(Debug)]
pub(crate) struct ModelHttp {
    client: reqwest::Client,
    url: String,
    key: Option<ApiKey>,
    auth: AuthStyle,
    extra_headers: HeaderMap,
    max_retries: u32,
    retry_base_delay: Duration,
}

impl ModelHttp {
    pub(crate) fn new(
        config: &ModelConfig,
        path: &str,
        key: Option<ApiKey>,
        auth: AuthStyle,
        extra_headers: &[(&'static str, String)],
    ) -> Result<ModelHttp, ModelError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(config.request_timeout)
            .connect_timeout(config.request_timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|error| ModelError::Client(error.to_string()))?;
        let mut headers = HeaderMap::new();
        for (name, value) in extra_headers {
            let value = HeaderValue::from_str(value)
                .map_err(|_| ModelError::Config(format!("invalid value for header {name}")))?;
            headers.insert(HeaderName::from_static(name), value);
        }
        Ok(ModelHttp {
            client,
            url: format!("{}{path}", config.base_url.trim_end_matches('/')),
            key,
            auth,
            extra_headers: headers,
            max_retries: config.max_retries,
            retry_base_delay: config.retry_base_delay,
        })
    }

    /// POSTs `body` and returns the parsed JSON response, retrying only no-effect failures.
    pub(crate) async fn post(&self, body: &Value) -> Result<Value, ModelError> {
        let mut n_attempts = 0u32;
        loop {
            n_attempts += 1;
            let retries_left = n_attempts <= self.max_retries;
            let request = self.request(body)?;
            let response = match request.send().await {
                Ok(response) => response,
                Err(error) if retries_left && (error.is_connect() || error.is_timeout()) => {
                    let delay = self.backoff(n_attempts, None);
                    tracing::warn!(url = %self.url, attempt = n_attempts, ?delay,
                        "model call got no response; retrying");
                    tokio::time::sleep(delay).await;
                    continue;
                }
                Err(error) => {
                    return Err(ModelError::Transport {
                        url: self.url.clone(),
                        n_attempts,
                        message: self.scrub(&error.to_string()),
                    });
                }
            };
            let status = response.status().as_u16();
            if matches!(status, 429 | 500 | 502 | 503 | 529) && retries_left {
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let delay = self.backoff(n_attempts, retry_after);
                tracing::warn!(url = %self.url, status, attempt = n_attempts, ?delay,
                    "model call refused with no effect; retrying");
                tokio::time::sleep(delay).await;
                continue;
            }
            let text = response
                .text()
                .await
                .map_err(|error| ModelError::Transport {
                    url: self.url.clone(),
                    n_attempts,
                    message: format!(
                        "failed to read the response body: {}",
                        self.scrub(&error.to_string())
                    ),
                })?;
            if !(200..300).contains(&status) {
                return Err(ModelError::Status {
                    url: self.url.clone(),
                    status,
                    n_attempts,
                    message: self.scrub(&vendor_message(&text)),
                });
            }
            tracing::debug!(url = %self.url, status, n_bytes = text.len(), "model call answered");
            return serde_json::from_str(&text)
                .map_err(|error| ModelError::Decode(format!("response is not json ({error})")));
        }
    }

    fn request(&self, body: &Value) -> Result<reqwest::RequestBuilder, ModelError> {
        let mut headers = self.extra_headers.clone();
        if let Some(key) = &self.key {
            let (name, value) = match self.auth {
                AuthStyle::Bearer => ("authorization", format!("Bearer {}", key.expose())),
                AuthStyle::XApiKey => ("x-api-key", key.expose().to_string()),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                ModelError::Config("the api key holds characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static(name), value);
        }
        Ok(self.client.post(&self.url).headers(headers).json(body))
    }

    fn backoff(&self, n_attempts: u32, retry_after: Option<Duration>) -> Duration {
        let exponent = n_attempts.saturating_sub(1).min(16);
        let computed = self.retry_base_delay.saturating_mul(1u32 << exponent);
        retry_after.unwrap_or(computed).min(MAX_DELAY)
    }

    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.redact(text),
            None => text.to_string(),
        }
    }
}

/// The vendor's `error.message` when the body has one, else the body's start.
fn vendor_message(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let message = parsed
        .as_ref()
        .and_then(|body| {
            body.pointer("/error/message")
                .or_else(|| body.get("message"))
                .or_else(|| body.get("error"))
        })
        .map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| text.to_string());
    message.chars().take(MAX_ERROR_CHARS).collect()
}

/// Installs ring as the process's rustls provider unless one is installed already.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: some provider is then installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
