import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { authTokenSecret, authTokenTtlSeconds } from './auth.config';
import { AuthController } from './auth.controller';
import { SampleAuthGuard } from './auth.guard';

/** Who is calling: SampleAuthGuard on every route, POST /auth/token to get an access token. */
@Module({
  imports: [
    JwtModule.registerAsync({
      // Read when the module is created, not when this file is imported.
      useFactory: () => ({
        secret: authTokenSecret(),
        signOptions: { algorithm: 'HS256', expiresIn: authTokenTtlSeconds() },
        verifyOptions: { algorithms: ['HS256'] },
      }),
    }),
  ],
  controllers: [AuthController],
  providers: [{ provide: APP_GUARD, useClass: SampleAuthGuard }],
})
export class AuthModule {}
