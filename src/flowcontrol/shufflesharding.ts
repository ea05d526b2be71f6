// Shuffle sharding (k8s.io/apiserver/pkg/util/shufflesharding): a flow's hash deals it a hand of distinct queues
// out of the deck, so two flows rarely share a whole hand and an elephant flow cannot fill every queue a mouse
// flow could use. The arithmetic is kube's, so a flow gets the same hand it would get from kube-apiserver.

/** Scratch space for one deal; validation caps handSize at 15 (60 bits of entropy), JS runs one deal at a time. */
const remainders: number[] = new Array(16).fill(0);

/** Deals handSize distinct queue indices out of numQueues into hand (reused by the caller) and returns hand. */
export function dealIntoHand(hash: bigint, numQueues: number, handSize: number, hand: number[]): number[] {
  let h = hash;
  for (let i = 0; i < handSize; i++) {
    const n = BigInt(numQueues - i);
    const next = h / n;
    remainders[i] = Number(h - n * next);
    h = next;
  }
  hand.length = handSize;
  // Each remainder indexes a deck with the earlier cards taken out; map it back to an index of the full deck.
  for (let i = 0; i < handSize; i++) {
    let card = remainders[i]!;
    for (let j = i; j > 0; j--) if (card >= remainders[j - 1]!) card++;
    hand[i] = card;
  }
  return hand;
}
