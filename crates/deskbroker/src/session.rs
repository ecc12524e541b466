//! `deskbroker session …`: every broker operation from a shell, printing JSON, over the Unix
//! socket or (with `--url`) over TLS. Session commands send `--lease-token` (env
//! `DESKBROKER_LEASE_TOKEN`) as the session's bearer token.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use desk_client::{Client, RemoteConfig};
use desk_contract::api::{ActionRequest, LeaseRequest, LeaseToken, ResetRequest, Screenshot};
use serde::Serialize;

use crate::cli::{ClientArgs, SessionCommand};
use crate::paths::default_socket;

/// The client `args` describe: the Unix socket, or a remote broker over TLS. With a session id,
/// `--lease-token` becomes that session's token.
fn client(args: &ClientArgs, session_id: Option<&str>) -> Result<Client> {
    let client = match &args.url {
        None => {
            anyhow::ensure!(
                args.ca.is_none() && args.cert.is_none() && args.key.is_none(),
                "--ca, --cert and --key need --url"
            );
            let client = Client::new(args.socket.clone().unwrap_or_else(default_socket));
            match &args.credential {
                Some(credential) => client.with_credential(credential.clone()),
                None => client,
            }
        }
        Some(url) => {
            let ca = args.ca.clone().context("--url needs --ca")?;
            let identity = match (&args.cert, &args.key) {
                (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
                (None, None) => None,
                _ => anyhow::bail!("--cert and --key go together"),
            };
            Client::remote(&RemoteConfig {
                url: url.clone(),
                ca,
                identity,
                credential: args.credential.clone(),
            })?
        }
    };
    if let (Some(session_id), Some(token)) = (session_id, &args.lease_token) {
        client.set_lease_token(session_id, LeaseToken::new(token.clone()));
    }
    Ok(client)
}

fn print_json(value: &impl Serialize) -> Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Writes the screenshot's PNG to `path` and blanks the base64 in what is printed.
fn divert_png(screenshot: &mut Screenshot, path: Option<&PathBuf>) -> Result<()> {
    if let Some(path) = path {
        let bytes = desk_contract::b64::decode(&screenshot.png_base64)
            .context("broker sent a screenshot that is not base64")?;
        write_file(path, &bytes)?;
        screenshot.png_base64 = format!("<{} bytes written to {}>", bytes.len(), path.display());
    }
    Ok(())
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("failed to write {}", path.display()))
}

pub(crate) async fn run(command: SessionCommand) -> Result<()> {
    match command {
        SessionCommand::Lease {
            client: args,
            task_id,
            attempt_id,
            profile,
        } => {
            let request = LeaseRequest {
                task_id,
                attempt_id,
                profile,
            };
            print_json(&client(&args, None)?.lease(&request).await?)
        }
        SessionCommand::Reset {
            client: args,
            session_id,
            request_id,
            png,
        } => {
            let mut response = client(&args, Some(&session_id))?
                .reset(&session_id, &ResetRequest { request_id })
                .await?;
            divert_png(&mut response.screenshot, png.as_ref())?;
            print_json(&response)
        }
        SessionCommand::Screenshot {
            client: args,
            session_id,
            png,
        } => {
            let mut screenshot = client(&args, Some(&session_id))?
                .screenshot(&session_id)
                .await?;
            divert_png(&mut screenshot, png.as_ref())?;
            print_json(&screenshot)
        }
        SessionCommand::Act {
            client: args,
            session_id,
            request_id,
            expected_action_index,
            action,
            png,
        } => {
            let action = serde_json::from_str(&action).context("--action is not a valid action")?;
            let request = ActionRequest {
                request_id,
                expected_action_index,
                screenshot_id: None,
                action,
            };
            let mut response = client(&args, Some(&session_id))?
                .act(&session_id, &request)
                .await?;
            if let Some(screenshot) = response.screenshot.as_mut() {
                divert_png(screenshot, png.as_ref())?;
            }
            print_json(&response)
        }
        SessionCommand::Checkpoint {
            client: args,
            session_id,
        } => print_json(
            &client(&args, Some(&session_id))?
                .checkpoint(&session_id)
                .await?,
        ),
        SessionCommand::Artifact {
            client: args,
            session_id,
            out,
        } => {
            let artifact = client(&args, Some(&session_id))?
                .artifact(&session_id)
                .await?;
            let bytes = desk_contract::b64::decode(&artifact.bytes_base64)
                .context("broker sent an artifact that is not base64")?;
            write_file(&out, &bytes)?;
            outln!(
                "{} bytes, sha256 {}, written to {}",
                artifact.size,
                artifact.sha256,
                out.display()
            );
            Ok(())
        }
        SessionCommand::Events {
            client: args,
            session_id,
        } => {
            out!(
                "{}",
                client(&args, Some(&session_id))?
                    .events(&session_id)
                    .await?
            );
            Ok(())
        }
        SessionCommand::FrameEvents {
            client: args,
            session_id,
        } => {
            out!(
                "{}",
                client(&args, Some(&session_id))?
                    .frame_events(&session_id)
                    .await?
            );
            Ok(())
        }
        SessionCommand::Status {
            client: args,
            session_id,
        } => print_json(
            &client(&args, Some(&session_id))?
                .status(&session_id)
                .await?,
        ),
        SessionCommand::Release {
            client: args,
            session_id,
        } => print_json(
            &client(&args, Some(&session_id))?
                .release(&session_id)
                .await?,
        ),
        SessionCommand::Drain {
            client: args,
            wait_secs,
        } => drain(&client(&args, None)?, wait_secs).await,
    }
}

/// `session drain`: asks the broker to stop leasing, then repeats the (idempotent) drain once
/// a second until no session is live or `wait_secs` passed.
async fn drain(client: &Client, wait_secs: u64) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(wait_secs);
    let mut capacity = client.drain().await?;
    while capacity.live_sessions > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        capacity = client.drain().await?;
    }
    print_json(&capacity)?;
    anyhow::ensure!(
        capacity.live_sessions == 0,
        "{} sessions still live after {wait_secs} s of draining",
        capacity.live_sessions
    );
    Ok(())
}
