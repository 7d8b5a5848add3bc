// Compact cards: a card shows its head, one line of why and its buttons, so
// several fit on a screen; it opens on keyboard focus, on a click on the card
// or on its Details button. A card opened by the keyboard closes when the
// keyboard moves to another card; one opened by a click stays open until
// clicked again. Pointer focus never opens or closes anything: a card that
// grows or shrinks between a button's mousedown and mouseup would move the
// button away from under the pointer and lose the click.

const INTERACTIVE = 'button, a, input, select, textarea, summary, label, details, pre, table';

function setOpen(card, toggle, open) {
  card.classList.toggle('open', open);
  toggle.setAttribute('aria-expanded', String(open));
  toggle.textContent = open ? 'Less' : 'Details';
}

/** Wires `card` (an article.card.compact) and its Details button. */
export function foldable(card, toggle) {
  toggle.addEventListener('click', () => {
    const open = !card.classList.contains('open') || card.classList.contains('focus-open');
    card.classList.remove('focus-open');
    setOpen(card, toggle, open);
  });
  card.addEventListener('click', (e) => {
    if (e.target.closest(INTERACTIVE) || String(window.getSelection() ?? '') !== '') return;
    if (card.classList.contains('open') && !card.classList.contains('focus-open')) return;
    card.classList.remove('focus-open');
    setOpen(card, toggle, true);
  });
  card.addEventListener('focusin', () => {
    if (!card.querySelector(':focus-visible') && !card.matches(':focus-visible')) return;
    for (const other of document.querySelectorAll('article.card.focus-open')) {
      if (other === card) continue;
      other.classList.remove('focus-open');
      setOpen(other, other.querySelector('.more'), false);
    }
    if (card.classList.contains('open')) return;
    card.classList.add('focus-open');
    setOpen(card, toggle, true);
    card.scrollIntoView({ block: 'nearest' });
  });
  setOpen(card, toggle, false);
}
