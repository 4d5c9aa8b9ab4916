//! A recorded streaming response (SSE) played in the background of a session.

use crate::failure::Cause;
use crate::recording::StreamEnd;
use crate::target;
use http_body_util::BodyExt;
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// Plays one streaming response in the background: reads (and drops) what the server sends.
/// `Client`: the browser closed it after the recorded time, so the server must keep it open for
/// `hold`; `Server`: the server ended it, so it must end within `hold` + the message timeout.
pub(super) async fn play_stream(
    mut s: target::Stream,
    end: StreamEnd,
    hold: Duration,
    timeout: Duration,
) -> Result<(), Cause> {
    let deadline = Instant::now()
        + match end {
            StreamEnd::Client => hold,
            StreamEnd::Server => hold + timeout,
        };
    loop {
        tokio::select! {
            biased;
            _ = sleep_until(deadline) => {
                return match end {
                    StreamEnd::Client => Ok(()),
                    StreamEnd::Server => Err(Cause::Timeout(format!(
                        "event stream not ended by the server within {hold:?} + {timeout:?} (--message-timeout)"
                    ))),
                };
            }
            f = s.body.frame() => match f {
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(Cause::Closed(format!("event stream broke: {e}"))),
                None => {
                    return match end {
                        StreamEnd::Server => Ok(()),
                        StreamEnd::Client => Err(Cause::StreamEndedEarly { recorded: hold }),
                    };
                }
            }
        }
    }
}
