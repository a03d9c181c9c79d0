import { Injectable } from '@nestjs/common';
import { ConditionalWriter } from '../../lib';
import type { ConditionalWriteResult, VersionedResult } from '../../lib';
import { Customer } from './customer.entity';
import type { PatchCustomerDto, ReplaceCustomerDto } from './customer.dto';

/**
 * Customers through ConditionalWriter: every write checks the request's If-Match /
 * If-None-Match in the same statement that writes, and the answer gets the new ETag.
 */
@Injectable()
export class CustomersService {
  constructor(private readonly writer: ConditionalWriter) {}

  find(id: string): Promise<VersionedResult<Customer> | null> {
    return this.writer.find(Customer, id);
  }

  replace(id: string, dto: ReplaceCustomerDto): Promise<ConditionalWriteResult<Customer>> {
    return this.writer.replace(Customer, id, { name: dto.name, email: dto.email });
  }

  patch(id: string, dto: PatchCustomerDto): Promise<ConditionalWriteResult<Customer> | null> {
    const changes: Partial<Customer> = {};
    if (dto.name !== undefined) changes.name = dto.name;
    if (dto.email !== undefined) changes.email = dto.email;
    return this.writer.update(Customer, id, changes);
  }

  remove(id: string): Promise<boolean> {
    return this.writer.delete(Customer, id);
  }
}
