//! The durable mailboxes' calls of [`NatsTransport`] on JetStream: streams
//! whose limits express the policy, one pull consumer per stream, PubAcks
//! waited for.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::jetstream::{consumer, context::PublishError, stream};
use async_nats::HeaderMap;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::{inside_tokio, NatsTransport};
use crate::transport::{PubAck, StreamDelivery, StreamSpec, TransportError};

/// The consumers this client took: what each delivered, and its task.
#[derive(Default)]
pub(super) struct Streams {
    bound: HashMap<String, (mpsc::Receiver<StreamDelivery>, tokio::task::JoinHandle<()>)>,
}

impl Drop for Streams {
    fn drop(&mut self) {
        for (_, (_, task)) in self.bound.drain() {
            task.abort();
        }
    }
}

/// What a durable publish's failure means to the sender: refused by the
/// per-subject limit, unknown (no acknowledgement), or refused otherwise.
fn publish_error(e: PublishError) -> TransportError {
    use async_nats::jetstream::context::PublishErrorKind as K;
    match e.kind() {
        K::TimedOut | K::BrokenPipe => TransportError::NoAck,
        _ if e.to_string().contains("maximum messages per subject") => TransportError::SubjectFull,
        _ => TransportError::Broker(e.to_string()),
    }
}

impl NatsTransport {
    pub(super) fn durable_publish(
        &mut self,
        subject: &str,
        msg_id: &str,
        payload: Vec<u8>,
    ) -> Result<PubAck, TransportError> {
        inside_tokio()?;
        // The JetStream context needs the runtime's reactor.
        let js = {
            let _in = self.rt.enter();
            async_nats::jetstream::new(self.client.clone())
        };
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Msg-Id", msg_id);
        let subject = subject.to_owned();
        let timeout = self.options.ack_timeout;
        self.rt.block_on(async move {
            let ack = tokio::time::timeout(timeout, async {
                js.publish_with_headers(subject, headers, payload.into())
                    .await
                    .map_err(publish_error)?
                    .await
                    .map_err(publish_error)
            })
            .await
            .map_err(|_| TransportError::NoAck)??;
            Ok(PubAck {
                seq: ack.sequence,
                duplicate: ack.duplicate,
            })
        })
    }

    pub(super) fn durable_create(&mut self, spec: &StreamSpec) -> Result<(), TransportError> {
        inside_tokio()?;
        // The JetStream context needs the runtime's reactor.
        let js = {
            let _in = self.rt.enter();
            async_nats::jetstream::new(self.client.clone())
        };
        let config = stream::Config {
            name: spec.name.clone(),
            subjects: vec![spec.subject.clone()],
            max_messages_per_subject: spec
                .max_per_subject
                .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)),
            discard: if spec.discard_new {
                stream::DiscardPolicy::New
            } else {
                stream::DiscardPolicy::Old
            },
            discard_new_per_subject: spec.discard_new,
            // Durability is set, not left to defaults: on disk, on
            // `replicas` servers (each syncing every write when run with
            // `sync_interval: always`).
            storage: stream::StorageType::File,
            num_replicas: spec.replicas.max(1),
            duplicate_window: spec.duplicate_window,
            retention: stream::RetentionPolicy::Limits,
            ..Default::default()
        };
        let timeout = self.options.ack_timeout;
        let broker = |e: String| TransportError::Broker(e);
        let name = spec.name.clone();
        let stream = self.rt.block_on(async {
            tokio::time::timeout(timeout, js.create_or_update_stream(config))
                .await
                .map_err(|_| TransportError::NoAck)?
                .map_err(|e| broker(e.to_string()))?;
            js.get_stream(&name)
                .await
                .map_err(|e| broker(e.to_string()))
        })?;
        if !spec.consumer {
            return Ok(());
        }
        let cconfig = consumer::pull::Config {
            durable_name: Some(spec.name.clone()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: spec.ack_wait,
            // One unacknowledged message at a time: stream order, so an
            // applied sequence says exactly what was applied.
            max_ack_pending: 1,
            // The durable mailbox dead-letters past its own maximum.
            max_deliver: -1,
            deliver_policy: consumer::DeliverPolicy::All,
            ..Default::default()
        };
        let consumer = self
            .rt
            .block_on(async {
                tokio::time::timeout(
                    timeout,
                    stream.get_or_create_consumer::<consumer::pull::Config>(&name, cconfig),
                )
                .await
            })
            .map_err(|_| TransportError::NoAck)?
            .map_err(|e| broker(e.to_string()))?;
        let (tx, rx) = mpsc::channel(16);
        let task = self.rt.spawn(async move {
            // Errors (missed heartbeats, a lost connection, a server gone)
            // end one stream of messages; another is opened.
            loop {
                let mut messages = match consumer.messages().await {
                    Ok(m) => m,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                while let Some(m) = messages.next().await {
                    let Ok(m) = m else { break };
                    let Ok(info) = m.info() else { continue };
                    let d = StreamDelivery {
                        seq: info.stream_sequence,
                        delivery: u64::try_from(info.delivered).unwrap_or(0),
                        payload: m.payload.to_vec(),
                        ack: m.reply.as_ref().map(|r| r.to_string()).unwrap_or_default(),
                    };
                    if tx.send(d).await.is_err() {
                        return;
                    }
                }
            }
        });
        if let Some((_, old)) = self.streams.bound.insert(name, (rx, task)) {
            old.abort();
        }
        Ok(())
    }

    pub(super) fn durable_poll(&mut self, name: &str) -> Option<StreamDelivery> {
        let (rx, _) = self.streams.bound.get_mut(name)?;
        if let Ok(d) = rx.try_recv() {
            return Some(d);
        }
        if inside_tokio().is_err() {
            return None;
        }
        // Let the consumer's task run (the runtime may be driven only by
        // this transport's calls).
        self.rt.block_on(async {
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
        });
        self.streams.bound.get_mut(name)?.0.try_recv().ok()
    }
}
