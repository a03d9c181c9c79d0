import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

const decimalToNumber = {
  to: (v: number) => v,
  from: (v: string | number | null) => (v === null ? null : Number(v)),
};

/**
 * One ledger entry, written by the ledger consumer of `payment.captured` and `payment.refunded`. There is deliberately
 * no unique constraint on payment_id: one entry per payment is the inbox's job (a constraint
 * would hide a duplicate instead of showing it); a real ledger would add one as a second guard.
 */
@Entity({ name: 'ledger_entries' })
@Index('ix_ledger_entries_payment', ['paymentId'])
export class LedgerEntry {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'payment_id', type: 'varchar', length: 36 })
  paymentId!: string;

  @Column({ name: 'tenant_id', type: 'varchar', length: 100 })
  tenantId!: string;

  /**
   * `capture`: the payment's amount credited to the customer's account; `refund`: an amount of
   * it given back (`payment.refunded`).
   */
  @Column({ name: 'entry_type', type: 'varchar', length: 16 })
  entryType!: string;

  @Column({ type: 'decimal', precision: 18, scale: 2, transformer: decimalToNumber })
  amount!: number;

  @Column({ type: 'varchar', length: 3 })
  currency!: string;

  @Column({ name: 'customer_id', type: 'varchar', length: 64 })
  customerId!: string;

  /**
   * The entry's place among its payment's entries when the consumer applied it (1 for the
   * first): a payment's events are applied in the order they were written when, ordered by
   * position, its entries are its capture then its refunds as they were made.
   */
  @Column({ type: 'int', nullable: true })
  position!: number | null;

  /** The id of the message that produced the entry (the outbox message id). */
  @Column({ name: 'message_id', type: 'varchar', length: 255 })
  messageId!: string;

  @CreateDateColumn({ name: 'created_at', precision: 3 })
  createdAt!: Date;
}
