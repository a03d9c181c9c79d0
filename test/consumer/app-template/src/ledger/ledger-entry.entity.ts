import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('ledger_entries')
export class LedgerEntry {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'payment_id', type: 'varchar', length: 36 })
  paymentId!: string;

  @Column({ type: 'int' })
  amount!: number;
}
