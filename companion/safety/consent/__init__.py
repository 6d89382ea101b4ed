"""What the user is asked to consent to: the request and the four ways it ends, the approvers (the
card's, the terminal's), a yes or no said or typed, the still workspace from a card to the end of
its run, the request's text made visible, the audit log. Uses nothing else of safety/."""
