//! The body of a request the limiter refused: never parsed, read only when it is small and
//! comes at once, so that a rejection never holds a connection.

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use actix_web::http::ConnectionType;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::settings::HttpSettings;

/// Answers a refused request: reads and drops its body when its `Content-Length` is at
/// most [`keep_alive_body_limit`](crate::LimiterBuilder::keep_alive_body_limit) and it
/// all arrives within
/// [`keep_alive_body_time`](crate::LimiterBuilder::keep_alive_body_time), so that the
/// client's connection stays open for its next request; otherwise — a larger body, one
/// of unknown length (chunked), one that comes slowly — leaves it unread and closes the
/// connection once `response` is sent. Nothing is ever parsed.
pub(crate) async fn answer_refused(
    http: &HttpSettings,
    req: &HttpRequest,
    payload: &mut actix_web::dev::Payload,
    mut response: HttpResponse,
) -> HttpResponse {
    // Refused: the slots a concurrency middleware around it holds go back before its
    // body is awaited (a handler's own are dropped by the handler).
    super::in_flight::WrappingSlots::give_back(req);
    if discard_small_body(http, req, payload).await {
        return response;
    }
    response
        .head_mut()
        .set_connection_type(ConnectionType::Close);
    // actix reads a chunked body to its end after the response when nobody holds it
    // any more, to keep the connection: the response holds it until it is sent, so
    // that actix closes the connection instead.
    let unread = payload.take();
    response.map_body(|_, body| {
        BoxBody::new(Holding {
            body,
            _unread: unread,
        })
    })
}

/// Whether `req` comes without a body: nothing to read or hold when it is refused.
#[inline]
pub(crate) fn bodiless(req: &HttpRequest) -> bool {
    let headers = req.headers();
    !headers.contains_key(TRANSFER_ENCODING)
        && headers
            .get(CONTENT_LENGTH)
            .is_none_or(|length| length.as_bytes() == b"0")
}

/// Whether the body was read whole (or there was none).
async fn discard_small_body(
    http: &HttpSettings,
    req: &HttpRequest,
    payload: &mut actix_web::dev::Payload,
) -> bool {
    let headers = req.headers();
    if headers.contains_key(TRANSFER_ENCODING) {
        return false;
    }
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let length = match length {
        None | Some(0) => return true,
        Some(length) if length > http.keep_alive_body_limit => return false,
        Some(length) => length,
    };
    let drain = async {
        let mut read = 0;
        while read < length {
            let next = std::future::poll_fn(|cx| {
                futures_core::Stream::poll_next(std::pin::Pin::new(&mut *payload), cx)
            });
            match next.await {
                Some(Ok(chunk)) => read += chunk.len(),
                _ => return false,
            }
        }
        true
    };
    tokio::time::timeout(http.keep_alive_body_time, drain)
        .await
        .unwrap_or(false)
}

/// A response body that holds the request's unread body until it has been sent.
struct Holding {
    body: BoxBody,
    _unread: actix_web::dev::Payload,
}

impl MessageBody for Holding {
    type Error = <BoxBody as MessageBody>::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}
