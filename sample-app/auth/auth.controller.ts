import { BadRequestException, Body, Controller, HttpCode, Post } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { randomUUID } from 'node:crypto';
import { authTokenTtlSeconds } from './auth.config';

/**
 * A stand-in for an identity provider, so that the demo can show a token refresh: every call
 * signs a new access token for the subject it is given. Demo only: it asks for no password.
 */
@Controller('auth')
export class AuthController {
  constructor(private readonly jwt: JwtService) {}

  @Post('token')
  @HttpCode(200)
  async token(@Body() body: Record<string, unknown>) {
    const subject = body?.subject;
    if (typeof subject !== 'string' || !/^[\w.@-]{1,64}$/.test(subject)) {
      throw new BadRequestException(
        'subject must be 1 to 64 characters: letters, digits, "_", ".", "@" or "-"',
      );
    }
    // jti: two tokens for one subject differ even within the same second (a refresh).
    const accessToken = await this.jwt.signAsync({ sub: subject, jti: randomUUID() });
    return { access_token: accessToken, token_type: 'Bearer', expires_in: authTokenTtlSeconds() };
  }
}
