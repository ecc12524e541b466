//! The turn loop of one rollout, from the verified handoff to the end of play.
//!
//! Invariants kept here: a batch is checked as a whole ([`check_batch`]) before its first broker
//! request; items run sequentially with request ids `{rollout_id}-t{turn}-i{item}` and strictly
//! increasing expected indices; no observation is given between items; a failure after the
//! first request fails the rollout closed and nothing is ever re-sent; frame sequences must
//! increase strictly; every screenshot is saved under `frames/`; every item names the
//! screenshot the batch was read from (`screenshot_id`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use desk_client::Client;
use desk_contract::api::Screenshot;
use desk_contract::{Action, DisplaySize};

use crate::agent::{
    Agent, BatchDelivery, DeliveryStatus, Observation, ObservedImage, TokenUsage, TurnOutcome,
};
use crate::batch::check_batch;
use crate::record::{RolloutStatus, TraceItem, TraceTurn, TurnRecord};

/// The state of a rollout in play. Built by [`crate::rollout`] after the handoff.
pub(crate) struct Play<'a> {
    pub(crate) client: &'a Client,
    pub(crate) session_id: String,
    pub(crate) rollout_id: String,
    pub(crate) display: DisplaySize,
    pub(crate) dir: PathBuf,
    pub(crate) handoff: Instant,
    pub(crate) deadline: Instant,
    pub(crate) max_actions: u64,
    pub(crate) actions_used: u64,
    pub(crate) next_index: u64,
    // Invariant: the sequence of the last accepted frame; every later frame must exceed it.
    pub(crate) last_sequence: u64,
    pub(crate) last_shot: ObservedImage,
    /// The broker's id of `last_shot` (none for the reference image): every item of a batch
    /// names the image the agent read its coordinates from, so that the broker maps them
    /// through that image's geometry and refuses them if the image went stale.
    pub(crate) last_shot_id: Option<String>,
    pub(crate) last_frame: Option<String>,
    pub(crate) trace: Vec<TraceTurn>,
    pub(crate) tokens: TokenUsage,
    pub(crate) n_rejected: u32,
}

/// How play ended.
pub(crate) struct PlayEnd {
    pub(crate) status: RolloutStatus,
    pub(crate) detail: Option<String>,
    pub(crate) wall_time_ms: u64,
}

/// An error with its source chain on one line.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn end(status: RolloutStatus, detail: Option<String>) -> Result<RolloutStatus, PlayFail> {
    Err(PlayFail { status, detail })
}

struct PlayFail {
    status: RolloutStatus,
    detail: Option<String>,
}

impl Play<'_> {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.handoff.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Checks and saves a screenshot (`png`: its bytes, which desk-client checked against its
    /// `sha256`; none for a withheld frame); it becomes the current frame.
    pub(crate) fn accept_frame(
        &mut self,
        shot: &Screenshot,
        png: Option<&[u8]>,
    ) -> Result<String, String> {
        if shot.sequence <= self.last_sequence && self.last_frame.is_some() {
            return Err(format!(
                "frame sequence did not increase ({} after {})",
                shot.sequence, self.last_sequence
            ));
        }
        let png = png.unwrap_or_default().to_vec();
        let rel = format!("frames/{:06}.png", shot.sequence);
        crate::error::write_file(&self.dir.join(&rel), &png).map_err(|error| chain(&error))?;
        self.last_sequence = shot.sequence;
        self.last_shot = ObservedImage {
            png,
            width: shot.width,
            height: shot.height,
            sequence: shot.sequence,
            sha256: shot.sha256.clone(),
        };
        self.last_shot_id = shot.screenshot_id.clone();
        self.last_frame = Some(rel.clone());
        Ok(rel)
    }

    fn observation(&self, turn: u32, delivery: Option<BatchDelivery>) -> Observation {
        Observation {
            turn,
            screenshot: self.last_shot.clone(),
            delivery,
            remaining_actions: self.max_actions.saturating_sub(self.actions_used),
            remaining_ms: u64::try_from(self.remaining().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// Plays turns until the rollout ends.
    pub(crate) async fn run(&mut self, agent: &mut dyn Agent) -> PlayEnd {
        let (status, detail) = match self.turns(agent).await {
            Ok(status) => (status, None),
            Err(fail) => (fail.status, fail.detail),
        };
        PlayEnd {
            status,
            detail,
            wall_time_ms: self.elapsed_ms(),
        }
    }

    async fn turns(&mut self, agent: &mut dyn Agent) -> Result<RolloutStatus, PlayFail> {
        let mut observation = self.observation(1, None);
        for turn in 1u32.. {
            let remaining = self.remaining();
            if remaining.is_zero() {
                return end(RolloutStatus::WallTimeExhausted, None);
            }
            let answer = match tokio::time::timeout(remaining, agent.turn(&observation)).await {
                Err(_) => return end(RolloutStatus::WallTimeExhausted, None),
                Ok(Err(error)) => return end(RolloutStatus::AgentFailed, Some(chain(&error))),
                Ok(Ok(answer)) => answer,
            };
            add_usage(&mut self.tokens, answer.usage);
            let mut record = TraceTurn {
                turn,
                answered_at_ms: self.elapsed_ms(),
                outcome: TurnRecord::NoToolCall {
                    text: String::new(),
                },
                items: Vec::new(),
                delivery: None,
                final_frame: None,
                usage: answer.usage,
                acknowledged_safety_checks: answer.acknowledged_safety_checks,
                said: answer.said,
            };
            let delivery = match answer.outcome {
                TurnOutcome::NoToolCall { text } => {
                    record.outcome = TurnRecord::NoToolCall { text };
                    self.trace.push(record);
                    return Ok(RolloutStatus::NoToolCall);
                }
                TurnOutcome::Malformed { call_id, error } => {
                    record.outcome = TurnRecord::Malformed {
                        call_id,
                        error: error.clone(),
                    };
                    self.reject(&mut record, format!("malformed tool call: {error}"))
                        .await
                }
                TurnOutcome::Actions { call_id, actions } => {
                    let remaining_actions = self.max_actions.saturating_sub(self.actions_used);
                    let checked = check_batch(&actions, self.display, remaining_actions);
                    record.outcome = TurnRecord::Actions { call_id, actions };
                    match checked {
                        Err(rejection) => self.reject(&mut record, rejection.message).await,
                        Ok(parsed) => self.execute(turn, &mut record, parsed).await,
                    }
                }
            };
            let delivery = match delivery {
                Ok(delivery) => delivery,
                Err(fail) => {
                    self.trace.push(record);
                    return Err(fail);
                }
            };
            record.delivery = Some(delivery.clone());
            record.final_frame = self.last_frame.clone();
            let sent_done = record
                .items
                .last()
                .is_some_and(|item| item.action_type == "done" && item.receipt.is_some());
            self.trace.push(record);
            if sent_done {
                return Ok(RolloutStatus::Done);
            }
            if self.actions_used >= self.max_actions {
                return Ok(RolloutStatus::ActionBudgetExhausted);
            }
            observation = self.observation(turn + 1, Some(delivery));
        }
        end(
            RolloutStatus::AgentFailed,
            Some("turn counter overflow".into()),
        )
    }

    /// Refuses a batch: nothing is executed; a fresh screenshot goes back with the reason.
    async fn reject(
        &mut self,
        record: &mut TraceTurn,
        reason: String,
    ) -> Result<BatchDelivery, PlayFail> {
        self.n_rejected += 1;
        let start_sha = self.last_shot.sha256.clone();
        let shot = self.client.screenshot_png(&self.session_id).await;
        let shot = shot.map_err(|error| PlayFail {
            status: RolloutStatus::FailedClosed,
            detail: Some(format!(
                "screenshot after a refused batch failed: {}",
                chain(&error)
            )),
        })?;
        self.accept_frame(&shot.answer, shot.png.as_deref())
            .map_err(|detail| PlayFail {
                status: RolloutStatus::FailedClosed,
                detail: Some(detail),
            })?;
        record.final_frame = self.last_frame.clone();
        Ok(BatchDelivery {
            status: DeliveryStatus::Rejected,
            n_executed: 0,
            message: format!("batch refused, nothing was executed: {reason}"),
            screen_changed: start_sha != self.last_shot.sha256,
            batch_start_sha256: start_sha,
            final_sha256: self.last_shot.sha256.clone(),
        })
    }

    /// Executes a checked batch item by item, open loop.
    async fn execute(
        &mut self,
        turn: u32,
        record: &mut TraceTurn,
        actions: Vec<Action>,
    ) -> Result<BatchDelivery, PlayFail> {
        let start_sha = self.last_shot.sha256.clone();
        let read_from = self.last_shot_id.clone();
        let n_items = actions.len();
        for (item_idx, action) in actions.into_iter().enumerate() {
            if self.remaining().is_zero() {
                return Err(PlayFail {
                    status: RolloutStatus::WallTimeExhausted,
                    detail: Some(format!(
                        "wall time ran out after {item_idx} of {n_items} items"
                    )),
                });
            }
            let request_id = request_id(&self.rollout_id, turn, item_idx);
            let mut item = TraceItem {
                item_idx,
                request_id: request_id.clone(),
                action_index: self.next_index,
                action_type: action.type_name().to_owned(),
                intent: action.intent().to_owned(),
                receipt: None,
                frame: None,
                frame_sequence: None,
                frame_sha256: None,
                error: None,
            };
            let request = desk_contract::api::ActionRequest {
                request_id,
                expected_action_index: self.next_index,
                screenshot_id: read_from.clone(),
                action,
            };
            let outcome = match self.client.act_png(&self.session_id, &request).await {
                Err(error) => Err(chain(&error)),
                Ok(answered) if answered.answer.action_index != self.next_index => Err(format!(
                    "broker assigned index {} where {} was expected",
                    answered.answer.action_index, self.next_index
                )),
                Ok(answered) => {
                    let (response, png, binary) = (answered.answer, answered.png, answered.binary);
                    // A delivered action whose frame failed (the receipt names the observation)
                    // still counts; the next frame is a fresh screenshot.
                    let shot = match response.screenshot {
                        Some(shot) => Ok(desk_client::binary::WithPng {
                            answer: shot,
                            png,
                            binary,
                        }),
                        None => self.client.screenshot_png(&self.session_id).await.map_err(
                            |error| {
                                format!(
                                    "action {} came without a frame ({:?}) and a fresh screenshot \
                                 failed: {}",
                                    response.action_index,
                                    response.receipt.observation_failures,
                                    chain(&error)
                                )
                            },
                        ),
                    };
                    shot.and_then(|shot| {
                        self.accept_frame(&shot.answer, shot.png.as_deref())
                            .map(|frame| {
                                item.frame = Some(frame);
                                item.frame_sequence = Some(shot.answer.sequence);
                                item.frame_sha256 = Some(shot.answer.sha256.clone());
                                item.receipt = Some(response.receipt);
                            })
                    })
                }
            };
            if let Err(error) = outcome {
                item.error = Some(error.clone());
                record.items.push(item);
                return Err(PlayFail {
                    status: RolloutStatus::FailedClosed,
                    detail: Some(format!(
                        "turn {turn} item {item_idx} failed after {item_idx} of {n_items} items \
                         were sent; the batch is not re-sent: {error}"
                    )),
                });
            }
            self.next_index += 1;
            self.actions_used += 1;
            record.items.push(item);
        }
        Ok(BatchDelivery {
            status: DeliveryStatus::InputInjected,
            n_executed: n_items as u64,
            message: format!(
                "input_injected: all {n_items} actions were delivered (delivery, not proof of \
                 effect); this is the screenshot after the last one"
            ),
            screen_changed: start_sha != self.last_shot.sha256,
            batch_start_sha256: start_sha,
            final_sha256: self.last_shot.sha256.clone(),
        })
    }
}

/// The deterministic request id of item `item_idx` of turn `turn`.
pub fn request_id(rollout_id: &str, turn: u32, item_idx: usize) -> String {
    format!("{rollout_id}-t{turn}-i{item_idx}")
}

fn add_usage(total: &mut TokenUsage, usage: TokenUsage) {
    total.input_tokens += usage.input_tokens;
    total.output_tokens += usage.output_tokens;
    total.reasoning_tokens += usage.reasoning_tokens;
}
