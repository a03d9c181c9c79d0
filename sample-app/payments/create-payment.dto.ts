import {
  IsISO4217CurrencyCode,
  IsNotEmpty,
  IsNumber,
  IsPositive,
  IsString,
  Max,
  MaxLength,
} from 'class-validator';

export class CreatePaymentDto {
  @IsNumber({ allowNaN: false, allowInfinity: false, maxDecimalPlaces: 2 })
  @IsPositive()
  @Max(1e15)
  amount!: number;

  @IsISO4217CurrencyCode()
  currency!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  customerId!: string;
}
