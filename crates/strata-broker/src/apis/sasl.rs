//! SaslHandshake (key 17) and SaslAuthenticate (key 36) when they reach the
//! APIs: on a SASL listener the connection's authenticator
//! (`crate::authentication`) handles them before dispatch, so here they
//! arrive only on listeners without SASL or out of order, and get
//! ILLEGAL_SASL_STATE as Kafka answers them.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::RequestContext;

pub(crate) async fn handshake(
    _ctx: &RequestContext,
    _req: SaslHandshakeRequest,
) -> SaslHandshakeResponse {
    let mut resp = SaslHandshakeResponse::default();
    resp.error_code = ResponseError::IllegalSaslState.code();
    resp
}

pub(crate) async fn authenticate(
    ctx: &RequestContext,
    _req: SaslAuthenticateRequest,
) -> SaslAuthenticateResponse {
    let mut resp = SaslAuthenticateResponse::default();
    resp.error_code = ResponseError::IllegalSaslState.code();
    resp.error_message = Some(StrBytes::from_string(format!(
        "SaslAuthenticate on listener {} ({}), which does not use SASL, or outside a SASL exchange",
        ctx.session.listener, ctx.session.protocol
    )));
    resp
}
