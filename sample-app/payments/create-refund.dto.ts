import { IsNumber, IsPositive, Max } from 'class-validator';

/** Body of `POST /payments/:id/refunds`: the amount given back (at most the payment's). */
export class CreateRefundDto {
  @IsNumber({ allowNaN: false, allowInfinity: false, maxDecimalPlaces: 2 })
  @IsPositive()
  @Max(1e15)
  amount!: number;
}
