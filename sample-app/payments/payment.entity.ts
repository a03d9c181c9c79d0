import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

const decimalToNumber = {
  to: (v: number) => v,
  from: (v: string | number | null) => (v === null ? null : Number(v)),
};

@Entity({ name: 'payments' })
@Index('ix_payments_customer', ['customerId', 'createdAt'])
export class Payment {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'tenant_id', type: 'varchar', length: 100 })
  tenantId!: string;

  @Column({ type: 'decimal', precision: 18, scale: 2, transformer: decimalToNumber })
  amount!: number;

  @Column({ type: 'varchar', length: 3 })
  currency!: string;

  @Column({ name: 'customer_id', type: 'varchar', length: 64 })
  customerId!: string;

  @Column({ type: 'varchar', length: 16 })
  status!: string;

  @CreateDateColumn({ name: 'created_at', precision: 3 })
  createdAt!: Date;
}
