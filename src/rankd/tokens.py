"""Player tokens: HS256 JWTs a game client holds instead of a key (CONTRACT v1.3).

A token names one player (``sub``), what it may do (``scope``: space-separated ``read``,
``submit``, ``join``) and when it stops working (``exp``, required). It is signed with the
first secret of RANKD_PLAYER_TOKEN_SECRET and accepted under any of them, so a secret is
rotated by putting the new one first, and dropping the old one once the tokens it signed
have expired. A game server may mint tokens itself with any JWT library and the same secret.

Why no revocation list: tokens are short (at most MAX_TTL_S, also enforced on tokens minted
elsewhere), and everything a token can do is also bounded by moderation (a banned player's
runs are kept out of public view whoever sends them). A token is never logged: the access log
carries paths only, and no error message repeats one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import jwt

from rankd.errors import Forbidden, Unauthorized
from rankd.formats import is_player_id

Scope = Literal["read", "submit", "join"]
SCOPES: tuple[Scope, ...] = ("read", "submit", "join")
MIN_TTL_S = 60
MAX_TTL_S = 7 * 86_400
# HS256 keys shorter than the hash are weak (RFC 7518 3.2); refused at start
MIN_SECRET_BYTES = 32
ALGORITHM = "HS256"


@dataclass(frozen=True, slots=True)
class PlayerToken:
    """What a verified token grants."""

    player_id: str
    scopes: frozenset[str]
    expires_at_s: int

    def require(self, scope: Scope) -> None:
        if scope not in self.scopes:
            raise Forbidden(f"this player token lacks the '{scope}' scope")


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts: worth verifying as a token (a key never has two dots
    in this shape by accident, and if it does, it simply fails verification)."""
    return token.count(".") == 2


class PlayerTokens:
    """Mints and verifies player tokens with a list of secrets (the first signs)."""

    def __init__(self, secrets: list[str], leeway_s: int = 30) -> None:
        if not secrets:
            raise ValueError("at least one secret is needed")
        for secret in secrets:
            if len(secret.encode()) < MIN_SECRET_BYTES:
                raise ValueError(
                    f"each secret must be at least {MIN_SECRET_BYTES} bytes "
                    "(e.g. `openssl rand -hex 32`)"
                )
        self.secrets = [s.encode() for s in secrets]
        self.leeway_s = leeway_s

    def mint(
        self, player_id: str, scopes: list[str], ttl_s: int, now_s: int | None = None
    ) -> tuple[str, int]:
        """A signed token and its expiry (Unix seconds)."""
        now = int(time.time()) if now_s is None else now_s
        exp = now + ttl_s
        claims = {"sub": player_id, "scope": " ".join(scopes), "iat": now, "exp": exp}
        return jwt.encode(claims, self.secrets[0], algorithm=ALGORITHM), exp

    def verify(self, token: str, now_s: float | None = None) -> PlayerToken:
        """The grant of a valid token; Unauthorized (naming the fault, never the token)."""
        claims = None
        expired = False
        for secret in self.secrets:
            try:
                claims = jwt.decode(
                    token,
                    secret,
                    algorithms=[ALGORITHM],  # pinned: no "none", no key confusion
                    leeway=self.leeway_s,
                    options={"require": ["exp", "sub"], "verify_aud": False},
                )
                break
            except jwt.ExpiredSignatureError:
                expired = True
                break  # the signature held (exp is checked after it): no other secret will do
            except jwt.InvalidSignatureError:
                continue
            except jwt.InvalidTokenError as exc:
                raise Unauthorized(f"the player token is not valid: {_reason(exc)}") from None
        if expired:
            raise Unauthorized("the player token has expired; ask the game server for a new one")
        if claims is None:
            raise Unauthorized("the player token's signature does not match any secret")
        now = time.time() if now_s is None else now_s
        exp = claims["exp"]
        if not isinstance(exp, int) or exp > now + MAX_TTL_S + self.leeway_s:
            raise Unauthorized(f"the player token must expire within {MAX_TTL_S // 86_400} days")
        sub, scope = claims.get("sub"), claims.get("scope", "")
        if not isinstance(sub, str) or not is_player_id(sub):
            raise Unauthorized("the player token's sub is not a player id")
        if not isinstance(scope, str):
            raise Unauthorized("the player token's scope must be a space-separated string")
        return PlayerToken(sub, frozenset(s for s in scope.split(" ") if s in SCOPES), exp)


def _reason(exc: Exception) -> str:
    # PyJWT's messages name claims and formats, never the token itself; one line, bounded
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
