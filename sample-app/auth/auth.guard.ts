import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { createHash } from 'node:crypto';

/** Who is calling, as this guard puts it on the request (`req.user`). */
export interface SampleCaller {
  /** `user:<sub>` for an access token, `key:<hash>` for an API key: the idempotency principal. */
  subject: string;
}

/** A JWT's shape: three base64url parts. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * The sample app's authentication: identifies the caller from `Authorization` and puts the
 * subject on the request, where `principalResolver` reads it. It never refuses an anonymous
 * request (the sample's routes are open); a bearer token shaped like a JWT must be one this app
 * signed (HS256, AUTH_TOKEN_SECRET) and unexpired, and names its user in `sub`: a refreshed
 * token for the same user is the same subject, hence the same idempotency scope. Any other
 * `Authorization` value is an API key: a static credential that is its client's identity, so
 * its hash is the subject. Your app does the same with its own guard (Passport, an API gateway's
 * header): the principal is who the caller is, never the bytes of what it holds.
 */
@Injectable()
export class SampleAuthGuard implements CanActivate {
  constructor(private readonly jwt: JwtService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const req = context.switchToHttp().getRequest();
    const raw = req.headers?.authorization;
    const auth: string | undefined = Array.isArray(raw) ? raw[0] : raw;
    if (!auth) return true;
    const token = /^bearer\s+(\S+)$/i.exec(auth)?.[1];
    req.user = {
      subject:
        token && JWT.test(token) ? `user:${await this.userOf(token)}` : `key:${hashOf(auth)}`,
    } satisfies SampleCaller;
    return true;
  }

  private async userOf(token: string): Promise<string> {
    try {
      const { sub } = await this.jwt.verifyAsync<{ sub?: unknown }>(token);
      if (typeof sub === 'string' && sub) return sub;
    } catch {
      // invalid signature, expired, malformed: answered below
    }
    throw new UnauthorizedException(
      'The access token is invalid or expired. Get a new one (POST /auth/token) and retry with the same Idempotency-Key.',
    );
  }
}

const hashOf = (credential: string) =>
  createHash('sha256').update(credential).digest('hex').slice(0, 32);
